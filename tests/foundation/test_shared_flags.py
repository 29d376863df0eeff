"""The flags several commands share are declared and checked in one place (kdt.cli: add_trainer_version_arg,
add_kubernetes_version_arg): every command that takes one gets it from the helper, and a bad value ends each
of them in the same one line, exit 2, before anything is rendered or printed."""
from __future__ import annotations

import argparse
import importlib

import pytest

import kdt.cli as CLI
from kdt import versions
from kdt.cli.main import COMMANDS

# flag -> (the helper's argparse type, a value no command accepts, commands known to take the flag)
FLAGS = {
    "--trainer-version": (CLI.trainer_version_arg, "9.9", {"argocd", "lint", "merge-preview", "run", "validate"}),
    "--kubernetes-version": (CLI.kubernetes_version_arg, "0.1", {"lint", "preview", "validate"}),
}


class _Parsed(Exception):
    pass


@pytest.fixture(scope="module")
def parsers():
    """Each command's parser, as its main builds it (caught at parse_args, so the command does nothing)."""
    out = {}
    original = argparse.ArgumentParser.parse_args

    def catch(self, args=None, namespace=None):
        out[command] = self
        raise _Parsed

    argparse.ArgumentParser.parse_args = catch
    try:
        for command, module in COMMANDS.items():
            with pytest.raises(_Parsed):
                importlib.import_module(f"kdt.cli.{module}").main([])
    finally:
        argparse.ArgumentParser.parse_args = original
    return out


def _options(parser) -> dict:
    return {opt: a for a in parser._actions for opt in a.option_strings}


@pytest.mark.parametrize("flag", FLAGS)
def test_every_command_that_takes_the_flag_gets_it_from_the_helper(parsers, flag):
    helper, _, known = FLAGS[flag]
    takers = {c for c, p in parsers.items() if flag in _options(p)}
    assert takers >= known, f"{flag}: {sorted(known - takers)} no longer take it"
    for command in sorted(takers):
        action = _options(parsers[command])[flag]
        assert action.type is helper, f"kdt {command} declares {flag} itself: use kdt.cli's helper"
        assert action.metavar == "X.Y"


@pytest.mark.parametrize("flag", FLAGS)
def test_a_bad_value_is_the_same_one_line_and_exit_2_for_every_command(parsers, flag, capsys, monkeypatch):
    from kdt.cli.main import main
    monkeypatch.setattr(CLI, "_PROG", None)          # main names the tool for the rest of the process
    _, bad, _ = FLAGS[flag]
    messages = set()
    for command in sorted(c for c, p in parsers.items() if flag in _options(p)):
        code = main([command, flag, bad])
        out, err = capsys.readouterr()
        prefix = f"kdt {command}: error: "
        assert code == 2 and out == "" and err.startswith(prefix) and err.count("\n") == 1, (command, out, err)
        messages.add(err[len(prefix):])
    assert len(messages) == 1 and next(iter(messages)).startswith(f"{flag} {bad}: "), messages


def test_the_helpers_read_a_release_as_every_command_does():
    assert CLI.trainer_version_arg("v2.3.0") == CLI.trainer_version_arg("2.3") == "2.3"
    assert CLI.trainer_version_arg(versions.TRAINER_DEFAULT) == versions.TRAINER_DEFAULT
    assert CLI.kubernetes_version_arg(f"v{versions.KUBERNETES_DEFAULT}.2") == versions.KUBERNETES_DEFAULT
    for helper, bad in ((CLI.trainer_version_arg, "2.2"), (CLI.kubernetes_version_arg, "1.9")):
        with pytest.raises(CLI.UsageError):
            helper(bad)
