"""The one reader of ``where`` options (mlsql_ray.options): typed values matched ignoring case,
and the check of unknown options that warns the running statement (an error when it is strict or
when no statement runs)."""

from __future__ import annotations

import pytest

from mlsql_ray import MLSQLError
from mlsql_ray import options


@pytest.mark.parametrize("text, value", [("true", True), ("TRUE", True), (" False ", False), ("fAlSe", False)])
def test_a_flag_is_true_or_false_in_any_case(text, value):
    assert options.flag({"mergeSchema": text}, "mergeSchema", not value) is value
    assert options.boolean(text) is value


def test_a_flag_names_its_option_and_owner_when_the_value_is_no_boolean():
    assert options.flag({}, "header", True) is True
    with pytest.raises(MLSQLError, match=r"^load excel: header must be \"true\" or \"false\", not 'yes'$"):
        options.flag({"header": "yes"}, "header", False, "load excel")
    with pytest.raises(ValueError, match=r"expected \"true\" or \"false\", not '1'"):
        options.boolean("1")


def test_an_option_name_is_matched_ignoring_case_the_exact_spelling_first():
    assert options.get({"MergeSchema": "a"}, "mergeSchema") == "a"
    assert options.get({"mergeschema": "b", "mergeSchema": "c"}, "mergeSchema") == "c"
    assert options.get({}, "x", "default") == "default"


def test_numbers_and_choices():
    assert options.integer({"n": " 3 "}, "n", 1, minimum=1) == 3
    with pytest.raises(MLSQLError, match="n must be at least 1, not 0"):
        options.integer({"n": "0"}, "n", 1, minimum=1)
    with pytest.raises(MLSQLError, match="n must be a whole number, not '1.5'"):
        options.integer({"n": "1.5"}, "n", 1)
    assert options.number({"p": "1e-3"}, "p", 1.0) == 0.001
    modes = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
    assert options.choice({"mode": "failfast"}, "mode", modes, "PERMISSIVE") == "FAILFAST"
    assert options.choice({"mode": " "}, "mode", modes, "PERMISSIVE") == "PERMISSIVE"
    with pytest.raises(MLSQLError, match=r"mode must be one of PERMISSIVE, DROPMALFORMED, FAILFAST, not 'permisive' "
                                         r"\(did you mean 'PERMISSIVE'\?\)"):
        options.choice({"mode": "permisive"}, "mode", modes, "PERMISSIVE")


def test_an_unknown_option_warns_the_running_statement_once_and_is_left_out():
    notes = options.Notes()
    with options.noting(notes):
        for _ in range(2):
            assert options.check_known(["inputCol", "ouputCol"], ["inputCol", "outputCol"], "X") == ["inputCol"]
    assert notes.take() == ["X has no option 'ouputCol' (did you mean 'outputCol'?); it knows: inputCol, outputCol; "
                            "ignored (set strictOptions=\"true\" to make this an error)"]
    assert notes.take() == []


def test_strict_or_outside_a_statement_an_unknown_option_is_an_error():
    with pytest.raises(MLSQLError, match=r"^X has no options 'a', 'zzz'; it knows: b$"):
        options.check_known(["a", "zzz"], ["b"], "X")
    with options.noting(options.Notes(strict=True)), pytest.raises(MLSQLError, match="did you mean 'bb'"):
        options.check_known(["b"], ["bb"], "X", ignore_case=False)
