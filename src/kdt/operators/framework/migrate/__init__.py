"""The machinery of `kdt migrate` every operator's migration uses: `patch` (the JSON patches a migration is made
of), `launcher` (torchrun's command line as torchrun reads it), `plan` (a plan's type), `compare` (the pods
before and after, compared pod by pod against the table of equivalences, kdt.operators.migration), `sides`
(what both sides share). Each operator's plan and side: `operators/<operator>/migrate.py`."""
