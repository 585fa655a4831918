"""bashlex with its shipped parse tables parses exactly as bashlex with the tables it builds itself.

Each side runs in a process of its own (bashlex builds its parser once, at
import): one imports it through ``jcli_sidecar.guards.shell_tables``, the
other plainly. The guard tests (tests/guards/test_guards.py, test_guards_reach.py)
then check every decision through the installed ``j-cli``.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Shell lines of every construct the guards read, and some bashlex refuses.
CORPUS = [
    "jupyter nbconvert --execute a.ipynb",
    "touch ran && jupyter nbconvert --to notebook --execute x.ipynb --output y.ipynb",
    "papermill in.ipynb out.ipynb -p alpha 0.6",
    "python a.py; python -m jupyter nbconvert --execute 'my nb.ipynb'",
    "cd sub && python ../a.py | tee log.txt > out 2>&1",
    "pushd notebooks; jupyter execute x.ipynb; popd",
    "bash -c 'jupyter nbconvert --execute x.ipynb'",
    'sh -c "cd sub; python a.py"',
    "env -S 'python -u' a.py",
    "sudo -u nobody python3 a.py",
    "xargs -n1 jupyter execute < list.txt",
    "find . -name '*.ipynb' -exec jupyter nbconvert --execute {} \\;",
    'for f in *.ipynb; do jupyter nbconvert --execute "$f"; done',
    "while read f; do papermill $f out/$f; done < names",
    "if [ -f a.py ]; then python a.py; else echo no; fi",
    "case $x in a) python a.py;; *) echo other;; esac",
    "f() { python a.py; }; f",
    "(cd sub && python a.py) || exit 1",
    "{ python a.py; echo done; } > log",
    "echo $(python a.py) `date` $((1 + 2))",
    "x=1 y=2 python a.py",
    "export PYTHONPATH=. && python -c 'import a'",
    "python - <<'EOF'\nimport a\nEOF",
    "cat <<EOF > b.py\nprint(1)\nEOF\npython b.py",
    "time python a.py",
    "! python a.py",
    "python a.py &",
    "python a.py & python b.py & wait",
    "uv run python a.py",
    "ipython -c '%run a.py'",
    "echo 'jupyter nbconvert --execute x.ipynb'",
    "ls -la | grep ipynb | wc -l",
    "git add a.py && git commit -m 'notebook: run x.ipynb'",
    "python3 a.py >/dev/null 2>/dev/null </dev/null",
    "echo ${HOME:-/tmp} ${#x} ${x/a/b}",
    "[[ -f a.py && -n $x ]] && python a.py",
    "select x in a b; do echo $x; done",
    "coproc python a.py",
    "echo a\\ b 'c d' \"e $f\"",
    "cmd1 |& cmd2",
    "echo {a,b}.py",
    "((i++))",
    "python a.py ||",
    "echo 'unterminated",
    "if then fi",
    ")",
    "",
]

_PARSE = """
import json, sys
{load}
out = []
for line in json.loads(sys.stdin.read()):
    try:
        out.append([tree.dump() for tree in bashlex.parse(line)])
    except Exception as exc:
        out.append(f"{{type(exc).__name__}}: {{exc}}")
import bashlex.parser
print(json.dumps({{"trees": out, "production": type(bashlex.parser.yaccparser.productions[1]).__name__}}))
"""


def _parse_all(load: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PARSE.format(load=load)], input=json.dumps(CORPUS), capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(proc.stdout)


def test_shipped_tables_parse_every_line_exactly_as_bashlex_s_own():
    shipped = _parse_all("from jcli_sidecar.guards.shell_tables import import_bashlex; bashlex = import_bashlex()")
    plain = _parse_all("import bashlex")
    assert shipped["production"] == "_Production"  # the shipped tables were used: they fit the installed grammar
    assert plain["production"] == "Production"
    assert shipped["trees"] == plain["trees"]
    assert sum(isinstance(t, list) for t in plain["trees"]) >= 35 and any(isinstance(t, str) for t in plain["trees"])


def test_a_grammar_the_tables_were_not_built_from_is_built_the_usual_way():
    changed = "import jcli_sidecar.guards._bashlex_lr as t; t.GRAMMAR_SIGNATURE += 'x'\n"
    other = _parse_all(changed + "from jcli_sidecar.guards.shell_tables import import_bashlex; bashlex = import_bashlex()")
    assert other["production"] == "Production"
    assert other["trees"] == _parse_all("import bashlex")["trees"]


def test_after_the_import_bashlex_yacc_is_plys_own_again():
    code = (
        "from jcli_sidecar.guards.shell_tables import import_bashlex\n"
        "import sys\n"
        "b = import_bashlex()\n"
        "from bashlex import yacc\n"
        "assert yacc.yacc.__module__ == 'bashlex.yacc', yacc.yacc\n"
        "assert not any(type(f).__name__ == '_ShippedTablesFinder' for f in sys.meta_path)\n"
        "assert import_bashlex() is b\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_shipped_tables_are_what_the_installed_bashlex_builds():
    from jcli_sidecar.guards import _bashlex_lr as shipped

    code = "import sys; from jcli_sidecar.guards.shell_tables import table_source; sys.stdout.write(table_source())"
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    with open(shipped.__file__, encoding="utf-8") as fh:
        assert fh.read() == built, "regenerate: python -m jcli_sidecar.guards.shell_tables > jcli_sidecar/guards/_bashlex_lr.py"
