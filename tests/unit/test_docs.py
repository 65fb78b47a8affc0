"""The documentation agrees with the code: generated pages are current, every command's --help
names its section of the commands page, and the README stays a short entry point."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from instore.cli import COMMANDS, build_parser
from markdown.extensions.toc import slugify

from tests.cli import Cli

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
GENERATORS = ("docs/gen/reference.py", "docs/gen/results.py", "docs/gen/study.py")
LINK = re.compile(r"Documentation: docs/commands\.md#([a-z0-9-]+)")


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated pages written afresh, as `make docs` writes them (in their own processes:
    the commands page fixes $COLUMNS, which must not leak into this one)."""
    out = tmp_path_factory.mktemp("docs")
    for script in GENERATORS:
        subprocess.run([sys.executable, str(REPO / script), str(out)], check=True, cwd=REPO,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    return out


@pytest.mark.parametrize(
    "page", ["study-file.md", "site-file.md", "commands.md", "results.md", "study-results.md"]
)
def test_generated_page_is_current(regenerated: Path, page: str) -> None:
    fresh = (regenerated / page).read_text()
    committed = (DOCS / page).read_text() if (DOCS / page).is_file() else ""
    assert committed == fresh, (
        f"docs/{page} is stale: it differs from what docs/gen writes from the schemas, the "
        "parsers and bench/*.json -- run `make docs` and commit the page"
    )


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += [sub, *_subcommands(sub)]
    return out


def _headings() -> set[str]:
    text = (DOCS / "commands.md").read_text()
    return {slugify(m, "-") for m in re.findall(r"^#{2,4} (.+)$", text, re.MULTILINE)}


def test_every_command_help_names_its_section_of_the_commands_page() -> None:
    anchors = _headings()
    subs = _subcommands(build_parser())
    assert len(subs) >= len(COMMANDS)
    for sub in subs:
        found = LINK.findall(sub.format_help())
        assert found, f"`{sub.prog} --help` names no documentation page"
        assert found == [slugify(sub.prog, "-")], sub.prog
        assert found[0] in anchors, f"docs/commands.md has no section #{found[0]}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_link_is_there_when_only_that_command_is_loaded(command: str) -> None:
    # `instore X` builds the parser of X alone (start-up time): the link must not depend on
    # the other modules being registered.
    parser = build_parser(command)
    sub = next(s for s in _subcommands(parser) if s.prog == f"instore {command}")
    assert LINK.search(sub.format_help()), command


def test_help_from_the_command_line_names_the_page(cli: Cli) -> None:
    run = cli("site", "preflight", "--help", check=True, timeout=600)
    assert "Documentation: docs/commands.md#instore-site-preflight" in run.stdout


def test_readme_is_a_short_entry_point() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    # CI greps these two lines, verbatim
    assert (
        "    make study    # set up on a fresh machine, then run the whole default study\n" in text
    )
    assert (
        "    make test     # set up on a fresh machine, then run every test (unit, integration, "
        "e2e)\n" in text
    )
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "the README carries no dated measurement"
    assert "docs/own-site.md" in text and "reports/<site>/index.html" in text
    image = REPO / "docs" / "img" / "report-index.png"
    assert "docs/img/report-index.png" in text and image.stat().st_size < 200_000


def test_the_docs_index_links_to_measuring_your_own_site() -> None:
    index = (DOCS / "index.md").read_text()
    assert "](own-site.md)" in index
    nav = (REPO / "mkdocs.yml").read_text()
    assert "own-site.md" in nav


def _reference_run() -> dict:
    import json

    return json.loads((DOCS / "data" / "reference" / "run.json").read_text())


def test_the_hand_written_pages_quote_the_reference_runs_figures() -> None:
    """Figures quoted in hand-written pages are the reference run's (docs/data/reference): its
    duration and date (getting-started), its largest drifts (method). A new reference run
    that changes them fails here until the pages say so (issue 40: 39.8 min, 82% and 39%
    outlived their run)."""
    run = _reference_run()
    started = run["started"][:10]
    getting_started = " ".join((DOCS / "getting-started.md").read_text().split())
    assert f"for {run['minutes']} min on {started}" in getting_started
    read = max(d["max_read_drift"] for d in run["drift"].values())
    cpu = max(d["max_cpu_drift"] for d in run["drift"].values())
    method = " ".join((DOCS / "method.md").read_text().split())
    assert f"drifted up to {read:.0%}, and the CPU loop up to {cpu:.1%}" in method


# a commit, then in the same sentence "the reference (run) now", "[reference run](...)'s now"
REFERENCE_NOW = re.compile(
    r"\b([0-9a-f]{7})\b[^.]{0,120}?\breference(?: run)?(?:\]\(study-results\.md\))?(?:'s)? now\b"
)


def test_no_hand_written_page_calls_an_older_run_the_reference_run_now() -> None:
    """A run a hand-written page says is the reference run "now" is the one in docs/data/reference
    (predict.md said so of 9231a8c and of b7863c0 after each had been replaced; the measurement
    log, a record of each day, is left as written)."""
    run = _reference_run()
    pages = [REPO / "README.md", *(p for p in DOCS.glob("*.md") if p.name not in {
        "study-file.md", "site-file.md", "commands.md", "results.md", "study-results.md",
        "measurement-log.md"})]  # fmt: skip
    said = {(p.name, m.group(1)) for p in pages
            for m in REFERENCE_NOW.finditer(" ".join(p.read_text().split()))}  # fmt: skip
    assert {(page, commit) for page, commit in said if commit != run["commit"]} == set()
    assert REFERENCE_NOW.search("**The run of b7863c0** (2026-11-28, the [reference run]"
                                "(study-results.md) now; its traces")  # fmt: skip
    assert REFERENCE_NOW.search("of 9231a8c (2026-11-28, the reference now, on the same VM)")
    assert not REFERENCE_NOW.search("of 9231a8c (2026-11-28, the reference run then, on it)")


def test_the_results_page_calls_no_older_run_the_reference_run() -> None:
    """bench/launch_results.json names the run its full-profile sweep figures are of "the
    reference run (docs/data/reference)"; once another run is there, the page names the run
    it was, and where it is kept."""
    run = _reference_run()
    text = " ".join((DOCS / "results.md").read_text().split())
    named = re.findall(r"the reference run \(docs/data/reference\), commit `([0-9a-f]+)`", text)
    assert set(named) <= {run["commit"]}
    for commit in re.findall(r"the reference run when they were measured \(.*?, commit `([0-9a-f]+)`",
                             text):  # fmt: skip
        assert commit != run["commit"] and f"docs/data/trials/study-{commit}" in text


# --- every `instore ...` line of the hand-written pages and the README parses ----------------

HAND_WRITTEN = sorted(
    {p.name for p in DOCS.glob("*.md")}
    - {"study-file.md", "site-file.md", "commands.md", "results.md", "study-results.md"}
)
FENCE = re.compile(r"^\s*```")
# `instore WORDS` in a code line (after a prompt, a path such as .venv/bin/, or variables);
# not instore's own output ("instore sweep: one line per job")
BLOCK_COMMAND = re.compile(r"(?:^|[\s/])instore\s+(?![\w-]+:)(.*)")
INLINE_COMMAND = re.compile(r"`(?:\.venv/bin/)?instore ([^`]+)`")
SYNOPSIS = re.compile(r"[\[\](){}]|\.\.\.|\s\|\s")  # [optional] (a | b) FILE...: a synopsis
PLACEHOLDER = re.compile(r"^(<[^>]+>|[A-Z][A-Z0-9_]*(=[A-Z][A-Z0-9_]*)?)$")


def _code_lines(text: str) -> list[str]:
    """Lines of fenced or indented code blocks, continuation lines joined."""
    out, fenced, joined = [], False, ""
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            joined += line.rstrip("\\").strip() + " "
            if not line.rstrip().endswith("\\"):
                out.append(joined.strip())
                joined = ""
    return out


def _commands(text: str) -> list[tuple[str, bool]]:
    """(the words after `instore`, whether it is a whole command line to parse)."""
    found = []
    for line in _code_lines(text):
        match = BLOCK_COMMAND.search(line)
        if match:
            words = re.split(r"\s(?:#|&&|;|\|\||>|2>)", " " + match.group(1))[0].strip()
            if words:  # else a directory's name: `git clone URL instore && cd instore`
                found.append((words, not SYNOPSIS.search(words)))
    found += [(m.group(1).strip(), False) for m in INLINE_COMMAND.finditer(text)]
    return found


def _expand(words: list[str]) -> list[list[str]]:
    """``status|down`` (one word, alternatives) as one command per alternative."""
    out: list[list[str]] = [[]]
    for word in words:
        choices = word.split("|") if "|" in word and not word.startswith("-") else [word]
        out = [[*cmd, c] for cmd in out for c in choices]
    return out


def _subparser(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the deepest subcommand ``words`` name, and the words after it."""
    parser, rest = build_parser(), list(words)
    while rest:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or rest[0] not in subs[0].choices:
            break
        parser, rest = subs[0].choices[rest[0]], rest[1:]
    return parser, rest


def _problems(command: str, whole: bool) -> list[str]:
    problems = []
    for words in _expand(shlex.split(command.replace("[", " [ ").replace("]", " ] "))):
        parser, rest = _subparser(words)
        if parser.prog == "instore" and rest and not rest[0].startswith("-"):
            problems.append(f"no command `instore {rest[0]}`")
            continue
        options = {s for a in parser._actions for s in a.option_strings}
        for word in rest:
            option = word.split("=")[0]
            if option.startswith("--") and len(option) > 2 and option not in options:
                problems.append(f"`{parser.prog}` has no option {option}")
        if whole and not problems:
            args = [("1" if PLACEHOLDER.match(w) else w) for w in words]
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err):
                    build_parser().parse_args(args)
            except SystemExit as stop:
                if stop.code:
                    problems.append(err.getvalue().strip().splitlines()[-1])
    return problems


@pytest.mark.parametrize("page", [*HAND_WRITTEN, "README.md"])
def test_every_instore_line_in_the_page_parses(page: str) -> None:
    """Each `instore ...` a page shows runs as written: its subcommands exist, its options
    exist, and a whole command line in a code block parses (UPPER-CASE and <angled> words are
    placeholders). `instore site status --all` did not."""
    text = ((REPO if page == "README.md" else DOCS) / page).read_text()
    bad = {c: p for c, whole in _commands(text) if (p := _problems(c, whole))}
    assert not bad, f"{page}: {bad}"


def test_the_parser_check_catches_what_does_not_exist() -> None:
    assert _problems("site status --all", True) == ["`instore site status` has no option --all"]
    assert _problems("site explode mysite", True) != []
    assert _problems("sweep --site mysite --sections cache", True) == []
    assert _commands("    make study\n    .venv/bin/instore site up lan-hdd  # yours\n") == [
        ("site up lan-hdd", True)
    ]


def test_every_make_target_the_docs_and_errors_name_exists() -> None:
    """A `make X` in a page or an error's fix is a target of the Makefile (the fixes for a
    broken podman store once said "remove build/container/storage", which a user who is not
    root cannot: `make clean-container` does it inside podman's user namespace)."""
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.MULTILINE))
    named: dict[str, str] = {}
    sources = [*DOCS.glob("*.md"), REPO / "README.md", *(REPO / "workflow/instore").rglob("*.py")]
    for path in sources:
        for target in re.findall(r"`make ([a-z][a-z-]*)", path.read_text()):
            named.setdefault(target, str(path.relative_to(REPO)))
    assert "clean-container" in named
    assert {t: where for t, where in named.items() if t not in targets} == {}
