"""What reaches an interpreter around the parser, and payloads a guard cannot decode: through the real ``j-cli _hooks``.

The workspace is ``test_guards``'s: a paired py:percent ``analysis.py``/``analysis.ipynb``
(also one in ``sub/``), a plain script ``plain.py`` beside an unrelated
``plain.ipynb``, a ``.py`` with markers but no notebook, and an unpaired ``lonely.ipynb``.
Each bypass form is a corpus entry; each ordinary command looks close to one.
"""

from __future__ import annotations

import json
import os

import pytest
from helpers import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_guards import assert_allowed, assert_denied, assert_jcli_lines_parse, hook, shell
from test_guards import work as work  # noqa: F401 (a fixture)
from test_guards import work_template as work_template  # noqa: F401 (a fixture)

RUN_AROUND = [
    # the script on stdin: pipes, redirects, here-strings, here-documents
    "cat analysis.py | python",
    "cat analysis.py | sed 's/x/y/' | python3 -",
    "python < analysis.py",
    "python3 -u 0< analysis.py",
    "python /dev/stdin < analysis.py",
    'python <<< "$(cat analysis.py)"',
    "python - <<'EOF'\nexec(open('analysis.py').read())\nEOF",
    "python <<EOF\n$(cat analysis.py)\nEOF",
    "python <<EOF\nimport analysis\nEOF",
    "cat <<EOF | python\nexec(open('analysis.py').read())\nEOF",
    'python3 <<"EOF"\nimport analysis\nEOF',
    "python3 <<-EOF\n\timport analysis\n\tEOF",
    "python <<< 'import analysis'",
    "python <<< \"exec(open('analysis.py').read())\"",
    "{ cat analysis.py; } | python",
    "if true; then cat analysis.py; fi | python",
    # names given through xargs, parallel, find -exec
    "echo analysis.py | xargs python",
    "ls *.py | xargs -n 1 python3",
    "echo analysis | xargs -I{} python {}.py",
    "find . -name analysis.py -exec python {} \\;",
    "find . -name '*.py' -exec python3 {} +",
    "parallel python ::: analysis.py",
    # the interpreter named by a substitution or a variable
    "$(which python) analysis.py",
    "`which python3` analysis.py",
    '"$(command -v python3)" -u analysis.py',
    "PY=python; $PY analysis.py",
    "f=analysis.py; python $f",
    "sh -c 'python $0' analysis.py",
    "bash -c 'python \"$@\"' _ analysis.py",
    "jupyter run analysis.py",
    'echo "import analysis" | python',
    "nice -n 5 xargs python <<< analysis.py",
    "tee /dev/null < analysis.py | python",
    "python <(cat analysis.py)",
    "\\python analysis.py",
    "'py'thon analysis.py",
    "python3 -m IPython analysis.py",
    "python -m pdb -m analysis",
    'for f in *.py; do python "$f"; done',
    "python $(echo analysis.py)",
    'python -c "$(cat analysis.py)"',
    # env -S, pushd, runners
    "env -S 'python analysis.py'",
    "env -S'python3 -u analysis.py'",
    "cd sub && cd - && python analysis.py",
    "uv run analysis.py",
    "uv run -m analysis",
    "python -m pdb analysis.py",
    "python -m cProfile -o prof.out analysis.py",
    "coverage run analysis.py",
    # inline code that runs the file
    "python -c \"import runpy; runpy.run_path('analysis.py')\"",
    "python -c \"exec(open('analysis.py').read())\"",
    "python -c 'import analysis'",
    "python -c 'from sub import analysis'",
    "python -c \"import os; os.system('python analysis.py')\"",
    'ipython -c "%run analysis.py"',
    'ipython -c "%run -m analysis"',
    "ipython --InteractiveShellApp.file_to_run=analysis.py",
    # globs and braces that match the paired file
    "python *.py",
    "python analy?is.py",
    "python [a]nalysis.py",
    "python analysis.{py,txt}",
    "python analysis.p''y",
    "./analy*",
    # python -m of the paired module
    "python -m analysis",
    "python3 -W ignore -m analysis --flag",
    "python -m sub.analysis",
    "python -m runpy analysis",
    "cd sub && python -m analysis",
]

NOTEBOOK_AROUND = [
    "python -c \"import nbclient, nbformat; nbclient.NotebookClient(nbformat.read('analysis.ipynb', 4)).execute()\"",
    "python -c \"import papermill as pm; pm.execute_notebook('lonely.ipynb', 'o.ipynb')\"",
    "python - <<'EOF'\nfrom nbconvert.preprocessors import ExecutePreprocessor\nimport nbformat\nnb = nbformat.read('lonely.ipynb', 4)\nExecutePreprocessor().preprocess(nb)\nEOF",
    'ipython -c "%run lonely.ipynb"',
    "jupyter nbconvert --to script lonely.ipynb --stdout | python",
    "jupytext --to py:percent -o - lonely.ipynb | python3",
    "ipython lone*",
    "ls *.ipynb | xargs ipython",
    "$(which papermill) lonely.ipynb out.ipynb",
    "for nb in *.ipynb; do ipython $nb; done",
    "pytest --nbmake lonely.ipynb",
    "python -m pytest --nbval-lax lonely.ipynb",
    "treon lonely.ipynb",
    "quarto render lonely.ipynb --execute",
    "python -c \"import os; os.system('jupyter execute lonely.ipynb')\"",
]

ORDINARY_AROUND = [
    "cat analysis.py | grep foo",
    "cat analysis.py | wc -l",
    "head -n 20 analysis.py",
    'python -c "print(1)"',
    "python -c \"import ast; ast.parse(open('analysis.py').read())\"",
    "python -c 'import json, os, sys; print(sys.version)'",
    "python -m pytest",
    "python -m venv .venv",
    "python -m py_compile plain.py",
    "python -m json.tool < analysis.ipynb",
    "cat analysis.ipynb | python -m json.tool",
    "python plain.py < analysis.py",
    "ls | xargs rm -f",
    "find . -name '*.py'",
    "find . -name '*.py' | xargs grep -n TODO",
    "find . -name '*.py' -exec ruff check {} +",
    "echo $(which python)",
    "echo `which python3`",
    "git add *.py",
    "git diff -- '*.py'",
    "pip install -r req.txt",
    "cat > x.py <<EOF\nprint(1)\nEOF",
    "python <<< 'print(1)'",
    "python3 <<'EOF'\nimport json\nprint(json.dumps({'a': 1}))\nEOF",
    "cat > analysis_test.py <<'EOF'\nimport analysis\nEOF",
    "python plain.py *.py",
    "python plain.py",
    "cat plain.py | python",
    "python < plain.py",
    "echo plain.py | xargs python",
    "$(which python) plain.py",
    "pushd sub && ls; popd",
    "env -S 'python plain.py'",
    "ls analy*",
    "bash -c 'python \"$1\"' _ plain.py",
    "echo 'print(1)' | python",
    "for f in *.py; do echo $f; done",
    "f=plain.py; python $f",
    "for nb in *.ipynb; do jupyter nbconvert --to html $nb; done",
    "python -c 'import sys; print(sys.argv)' analysis.py",
    "python -m black analysis.py",
    "diff <(cat analysis.py) plain.py",
    "wc -l *.ipynb",
    "cp analysis.py /tmp/backup.py",
    "echo analysis.py > list.txt",
    "python -m pip list",
    "ruff format --check *.py",
    "grep -rn 'import analysis' .",
    "python -c 'x = 2 * 3; print(x)'",
    "uv run pytest -q",
    "jupyter nbconvert --to html lonely.ipynb",
    "cat lonely.ipynb | jq .cells",
    "pytest -q tests/test_notebooks.py",
    "quarto render lonely.ipynb",
    "python -c \"import json; nb = json.load(open('lonely.ipynb')); print([c.get('execution_count') for c in nb['cells']])\"",
    "python -c \"import json; print(json.load(open('analysis.ipynb'))['metadata'].get('jupyter'))\"",
    "sed -n '1,5p' analysis.py | cat -n",
]


@pytest.mark.parametrize("command", RUN_AROUND)
def test_python_run_denies_every_way_a_paired_file_reaches_an_interpreter(work, command):
    reason = assert_denied(hook("python-run-guard", shell(command, work)), "py:percent", "j-cli exec SESSION -f")
    assert "analysis.py" in reason
    assert assert_jcli_lines_parse(reason) >= 2


@pytest.mark.parametrize("command", NOTEBOOK_AROUND)
def test_notebook_exec_denies_code_that_runs_a_notebook_through_an_interpreter(work, command):
    reason = assert_denied(hook("notebook-exec-guard", shell(command, work)), "j-cli exec SESSION -f", ".ipynb")
    assert assert_jcli_lines_parse(reason) >= 2


@pytest.mark.parametrize("command", ORDINARY_AROUND)
def test_commands_close_to_the_bypasses_pass_every_shell_guard(work, command):
    for name in ("notebook-exec-guard", "python-run-guard"):
        assert_allowed(hook(name, shell(command, work)))


def test_an_unknowable_program_or_feed_is_denied_only_when_a_paired_file_is_involved(work):
    """A variable or a substitution says why; the same shapes without a paired file or notebook pass."""
    reason = assert_denied(hook("python-run-guard", shell("$(which python) analysis.py", work)))
    assert "known only when the shell runs it" in reason
    reason = assert_denied(hook("python-run-guard", shell("python *.py", work)))
    assert "expands `*.py` to" in reason
    for command in ("$PY plain.py", "$(which python) scripts/x.py", "cat $F | python", "xargs python < list.txt", "python $SCRIPT"):
        assert_allowed(hook("python-run-guard", shell(command, work)))


def test_pushd_and_popd_move_the_directory_like_cd(work):
    """From ``scripts/`` (no analysis.py there): only the directory stack brings the paired file in."""
    scripts = work / "scripts"
    assert_denied(hook("python-run-guard", shell("pushd ../sub && python analysis.py", scripts)), "sub/analysis.py")
    assert_denied(hook("python-run-guard", shell("pushd ../sub && pushd .. && popd && python analysis.py", scripts)), "sub/analysis.py")
    assert_denied(hook("python-run-guard", shell("pushd ../sub >/dev/null; pushd; pushd; python analysis.py", scripts)), "sub/analysis.py")
    assert_allowed(hook("python-run-guard", shell("pushd ../sub && popd && python analysis.py", scripts)))
    assert_allowed(hook("python-run-guard", shell("(pushd ../sub) && python analysis.py", scripts)))


def test_a_glob_is_expanded_in_the_directory_the_command_runs_in(work):
    assert_allowed(hook("python-run-guard", shell("python [p]lain.py", work)))
    assert_denied(hook("python-run-guard", shell("cd ../sub && python ana*.py", work / "scripts")), "sub/analysis.py")
    assert_allowed(hook("python-run-guard", shell("python 'analy*.py'", work)))  # quoted: no expansion, no such file
    assert_allowed(hook("python-run-guard", shell("python ana*.py", work / "scripts")))


def test_a_parser_failure_still_sees_the_pipe_and_skips_an_output_target(work):
    """``[[`` makes the parser refuse the line; the token scan keeps pipes and redirects apart."""
    assert_denied(hook("python-run-guard", shell("[[ -f x ]] || cat analysis.py | python", work)))
    assert_allowed(hook("python-run-guard", shell("[[ -f x ]] || echo hi > analysis.py", work)))


# -- payloads a guard cannot decode (through the real entry, raw bytes on stdin) ---------------------


def raw_shell(command: bytes, cwd) -> bytes:
    return b'{"tool_name": "Bash", "tool_input": {"command": "' + command + b'"}, "cwd": "' + str(cwd).encode() + b'"}'


@pytest.mark.parametrize(
    "payload",
    [
        b'{"session_id": "s\xff", "tool_name": "Bash", "tool_input": {"command": "python analysis.py"}, "cwd": "CWD"}',
        b'{"tool_name": "Bash", "tool_input": {"command": "python analysis.py # caf\xe9"}, "cwd": "CWD"}',
        b'{"tool_name": "Bash", \xff "tool_input": {"command": "python analysis.py"}, "cwd": "CWD"}',  # not JSON any more
        b'\xef\xbb\xbf{"tool_name": "Bash", "tool_input": {"command": "python analysis.py"}, "cwd": "CWD"}',  # a BOM
        b'{"tool_name": "Bash", "tool_input": {"command": "python analysis.py\ttab"}, "cwd": "CWD"',  # raw control, cut short
    ],
)
@pytest.mark.parametrize("platform", ["claude", "codex"])
def test_bytes_that_are_not_utf8_or_json_still_get_a_decision(work, payload, platform):
    result = hook("python-run-guard", None, platform=platform, raw=payload.replace(b"CWD", str(work).encode()))
    assert_denied(result, "analysis.py")


def test_a_path_with_a_byte_that_is_not_utf8_names_the_real_file(work):
    name = b"an\xffx"
    for ext in (b".py", b".ipynb"):
        os.rename(work / ("analysis" + ext.decode()), os.path.join(os.fsencode(work), name + ext))
    result = hook("python-run-guard", None, raw=raw_shell(b"python " + name + b".py", work))
    reason = assert_denied(result)
    assert result.stdout.decode("utf-8")  # the JSON on stdout stays UTF-8: the byte is its \udcff escape
    assert "$'an\\xffx.py'" in reason  # the byte, spelt as bash reads it back
    edit = b'{"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "' + name + b'.ipynb"}, "cwd": "' + str(work).encode() + b'"}'
    assert_denied(hook("notebook-edit-guard", None, raw=edit))


@pytest.mark.parametrize("escape", ["\\ud800", "\\udcff", "\\udfff"])
def test_a_lone_surrogate_escape_in_a_path_never_crashes_a_guard(work, escape):
    """A JavaScript host writes a broken character as U+FFFD: that file is found; nothing crashes into an allow."""
    for ext in (".py", ".ipynb"):
        os.rename(work / f"analysis{ext}", work / f"an\ufffdx{ext}")
    payload = ('{"tool_name": "Bash", "tool_input": {"command": "python an' + escape + 'x.py"}, "cwd": "' + str(work) + '"}').encode()
    result = hook("python-run-guard", None, raw=payload)
    assert b"guard failed" not in result.stderr
    assert_denied(result)
    edit = ('{"tool_name": "Edit", "tool_input": {"file_path": "an' + escape + 'x.ipynb"}, "cwd": "' + str(work) + '"}').encode()
    for name in ("notebook-edit-guard", "pair-drift-guard-pre", "pair-drift-guard-post"):
        result = hook(name, None, raw=edit)
        assert result.returncode in (0, 2) and b"guard failed" not in result.stderr, (name, result.stderr)
    assert_denied(hook("notebook-edit-guard", None, raw=edit))
    assert_allowed(hook("python-run-guard", None, raw=payload.replace(b"python", b"cat")))


BIG = 33 * 1024 * 1024


def test_an_oversized_payload_is_decided_on_the_fields_it_holds(work):
    """Over 32 MiB the payload is scanned as it streams by: an edit of a paired notebook is still denied."""
    filler = b"x" * BIG
    write = (
        b'{"cwd": "'
        + str(work).encode()
        + b'", "tool_name": "Write", "tool_input": {"content": "'
        + filler
        + b'", "file_path": "analysis.ipynb"}}'
    )
    assert_denied(hook("notebook-edit-guard", None, raw=write), "edit analysis.py instead")
    patch = (
        b'{"tool_name": "apply_patch", "cwd": "'
        + str(work).encode()
        + b'", "tool_input": {"command": "*** Begin Patch\\n*** Add File: big.txt\\n+'
        + filler
        + b'\\n*** Update File: sub/analysis.ipynb\\n@@\\n-a\\n+b\\n*** End Patch\\n"}}'
    )
    assert_denied(hook("notebook-edit-guard", None, raw=patch, platform="codex"), "sub/analysis.py")
    bash = (
        b'{"tool_name": "Bash", "tool_input": {"description": "'
        + filler
        + b'", "command": "python analysis.py"}, "cwd": "'
        + str(work).encode()
        + b'"}'
    )
    assert_denied(hook("python-run-guard", None, raw=bash))


def test_an_oversized_payload_of_an_ordinary_call_is_allowed_with_a_note(work):
    filler = b"y" * BIG
    bash = (
        b'{"tool_name": "Bash", "tool_input": {"description": "'
        + filler
        + b'", "command": "ls -la"}, "cwd": "'
        + str(work).encode()
        + b'"}'
    )
    result = hook("python-run-guard", None, raw=bash)
    assert_allowed(result)
    assert b"larger than 32 MiB" in result.stderr
    assert_allowed(hook("notebook-exec-guard", None, raw=b"{" + filler))  # nothing readable: allowed, as bad JSON is
    write = (
        b'{"tool_name": "Write", "tool_input": {"file_path": "' + str(work / "notes.txt").encode() + b'", "content": "' + filler + b'"}}'
    )
    assert_allowed(hook("notebook-edit-guard", None, raw=write))


def test_the_hook_answers_a_decoded_payload_as_the_same_json(work):
    """One invalid byte changes nothing in the decision's JSON: the reason is the same as for the clean payload."""
    clean = hook("python-run-guard", shell("python analysis.py", work))
    dirty = hook("python-run-guard", None, raw=json.dumps(shell("python analysis.py", work)).encode().replace(b'"s"', b'"s\xff"'))
    assert clean.stdout == dirty.stdout and clean.returncode == dirty.returncode == 2


# -- whatever the text, a rule answers (in process: thousands of commands) -----------------------------

_PIECES = [
    "python", "python3 -m", "ipython -c", "xargs", "find . -exec", "env -S", "pushd", "popd", "cd -", "cat", "$(", ")", "`",
    "|", "<", "<<<", "<<EOF\n", "\nEOF\n", "&&", ";", "'", '"', "\\", "{a,b}", "*.py", "analy?is.py", "[a]nalysis.py",
    "analysis.py", "analysis", "lonely.ipynb", "{}", "-I{}", "$f", "for f in", "do", "done", "f=", "\ud800", "\udcff", "\x00",
    "import", "exec(open(", "%run", "-c", "-m", "sub/", "../", "~", " ", "an\ud800x.py", "an\udcffx.py",
]  # fmt: skip


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=24))
@example(["python", "an\ud800x.py"])
@example(["cat", "an\udcffx.py", "|", "python"])
@example(["python", "-c", "'exec(open(", '"an\ud800x.py"', ").read())'"])
def test_any_command_text_gets_an_answer_never_an_exception(work, pieces):
    """Glued from the pieces of every bypass (lone surrogates, NULs and broken quotes included): the rules answer."""
    from jcli_sidecar.guards.guard_rules import notebook_exec, python_run
    from jcli_sidecar.guards.hook_payload import ToolCall

    call = ToolCall("shell", "Bash", " ".join(pieces), (), str(work), None)
    for rule in (python_run, notebook_exec):
        answer = rule(call)
        assert answer is None or "j-cli exec SESSION -f" in answer


@settings(max_examples=examples(300), deadline=None)
@given(
    st.binary(max_size=300)
    | st.builds(
        lambda a, b: a + b,
        st.sampled_from([b'{"tool_name": "Bash", "tool_input": {"command": "', b'{"tool": "edit", "args": {"filePath": "']),
        st.binary(max_size=80),
    )
)
def test_any_payload_bytes_parse_or_say_why(raw):
    from jcli_sidecar.guards.hook_payload import PayloadError, parse_payload

    try:
        call = parse_payload(raw)
    except PayloadError:
        return
    assert call.kind in ("shell", "edit", "write", "notebook_edit", "patch", "other")


# -- a plain line is read without the parser, as the parser reads it ------------------------------

_PLAIN_PIECES = ["python", "python3", "-m", "uv", "run", "papermill", "sudo", "-u", "x", "env", "A=1", "-p", "alpha=0.1", "cd", "sub",
                 "analysis.py", "../analysis.ipynb", "nohup", "timeout", "10", "xargs", "time", "if", "for", "in", "!", "{", "jupyter",
                 "nbconvert", "--execute", "--to=notebook", "a,b", "x+y", "@f", "%run", ":", ".", "/usr/bin/python", "\t"]  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(_PLAIN_PIECES), min_size=1, max_size=10))
@example(["x=1", "python", "a.py"])
def test_a_plain_line_is_read_without_the_parser_exactly_as_the_parser_reads_it(pieces):
    """Only lines the parser would read as one simple command of plain words skip it, with the same commands."""
    from unittest import mock

    from jcli_sidecar.guards import shell_commands

    text = " ".join(pieces)

    def read(line):
        return [(c.argv, [w.raw for w in c.argv], c.cwd, c.via, repr(c.stdin())) for c in shell_commands.commands(line, "/w")]

    fast = read(text)
    with mock.patch.object(shell_commands, "_plain_words", lambda line: None):
        parsed = read(text)
    assert fast == parsed, text
