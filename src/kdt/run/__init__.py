"""kdt run: a target's pods as local processes, with the operators' environment, ranks and restart rules.

Stages: `pods` (the merge preview's objects -> pods with env, addresses and folders),
`netshim` (names -> per-pod loopback addresses), `image` (what the project's image
gives a container), `controllers` (the kubelet's and the operators' lifecycle rules),
`faults` (--kill / --lose), `supervisor` (processes, logs, faults, cleanup),
`timeline` (text, JSON lines, PNG). The CLI is kdt/cli/run.py.
"""
