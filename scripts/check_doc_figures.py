#!/usr/bin/env python3
"""Checks the figures blocks of docs/*.md against the experiments that write them, without running any.

An experiment's figures sit in docs/experiments.md between

    <!-- figures: NAME (written by experiments/NAME/run.py; do not edit) -->
    <!-- end figures: NAME -->

which its run script replaces through experiments/common.py's write_figures (common.sh's write_figures in a
run.sh). This check fails when a block is not closed, is opened twice, or is closed without being opened; when
NAME is not a folder of experiments/ or the marker names another script than that folder's run script; when the
run script does not call the writer with NAME; when an experiment's run script calls the writer and
docs/experiments.md has no block for it; and when a table row of another page that names an experiment's run
script quotes a current figure (its second cell, up to the first ';') that is not in that experiment's block.

Exit status: 0 when every block and writer match, 1 otherwise (each problem on a line, FILE:LINE: ...).

  python3 scripts/check_doc_figures.py [--docs DIR] [--experiments DIR]
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))
import common  # noqa: E402  the markers' format

OPEN = re.compile(r"^\s*<!--\s*figures:")  # any line that means to open a block, well-formed or not
CLOSE = re.compile(r"^\s*<!--\s*end figures:")


def display(path):
    """The path relative to the repository root, when it is inside it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def run_script(folder):
    """The experiment's run script (run.py or run.sh), or None."""
    for name in ("run.py", "run.sh"):
        if (folder / name).is_file():
            return folder / name
    return None


def writer_names(script):
    """The names a run script passes to write_figures: write_figures("NAME", ...) in Python, write_figures NAME in
    bash."""
    text = script.read_text(encoding="utf-8")
    if script.suffix == ".py":
        return re.findall(r"""\bwrite_figures\(\s*["']([A-Za-z0-9_]+)["']""", text)
    return re.findall(r"""^\s*write_figures\s+["']?([A-Za-z0-9_]+)""", text, re.MULTILINE)


def blocks(page, problems):
    """{name: (line of its opening marker, script it names, its text)} of the page's well-formed blocks (the text
    of a block never closed is None); malformed ones go to problems."""
    found, open_block, body = {}, None, []  # open_block: (name, line number); body: its lines so far
    where = display(page)
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        start, end = common.FIGURES_START.match(line), common.FIGURES_END.match(line)
        if OPEN.search(line) and not start:
            problems.append(f"{where}:{number}: not a figures marker of the form "
                            f"'{common.figures_start('NAME', 'experiments/NAME/run.py')}': {line.strip()}")
        elif CLOSE.search(line) and not end:
            problems.append(f"{where}:{number}: not an end marker of the form '{common.figures_end('NAME')}': "
                            f"{line.strip()}")
        elif start:
            if open_block:
                problems.append(f"{where}:{open_block[1]}: the figures of {open_block[0]} are not closed before "
                                f"line {number} opens {start['name']}'s")
            open_block, body = (start["name"], number), []
            if start["name"] in found:
                problems.append(f"{where}:{number}: a second block of {start['name']}'s figures (the first at line "
                                f"{found[start['name']][0]})")
            found.setdefault(start["name"], (number, start["script"], None))
        elif end:
            if not open_block:
                problems.append(f"{where}:{number}: '{line.strip()}' closes no open block")
            elif end["name"] != open_block[0]:
                problems.append(f"{where}:{number}: '{line.strip()}' closes the block of {open_block[0]} opened at "
                                f"line {open_block[1]}")
            elif found[end["name"]][0] == open_block[1]:  # the first block of that name: its text
                found[end["name"]] = found[end["name"]][:2] + ("\n".join(body),)
            open_block = None
        elif open_block:
            body.append(line)
    if open_block:
        problems.append(f"{where}:{open_block[1]}: the figures of {open_block[0]} are never closed "
                        f"('{common.figures_end(open_block[0])}')")
    return found


QUOTED_RUN = re.compile(r"experiments/([A-Za-z0-9_]+)/run\.(?:py|sh)")
FIGURE = re.compile(r"\d[\d,]*\.\d+|\d+(?:\.\d+)?%")  # 2.40, 126.3, 7.9%, 31%: what a run measures


def quoted_figures(page, experiments_page, texts, problems):
    """Table rows of `page` that quote an experiment (its run script in a cell): the current figures of the row's
    second cell (up to its first ';', after which rows give history) must be in that experiment's block (`texts`:
    experiments_page's blocks by name), so that a run that moves a figure fails here until the quote follows.
    Returns how many figures were checked."""
    checked = 0
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        cells = [c.strip() for c in line.split(" | ")]
        runs = QUOTED_RUN.findall(line)
        if not line.startswith("|") or len(cells) < 3 or not runs:
            continue
        block = texts.get(runs[0])
        if block is None:
            continue  # an experiment without figures of its own (the check above says which must have them)
        for figure in FIGURE.findall(cells[1].split(";")[0]):
            checked += 1
            if not re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", block):  # whole: 7.9% is not 17.9%
                problems.append(f"{display(page)}:{number}: quotes {figure} from {runs[0]}, whose figures in "
                                f"{display(experiments_page)} no longer hold it: quote what its run wrote")
    return checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="the pages' folder (default docs/)")
    parser.add_argument("--experiments", type=Path, default=ROOT / "experiments",
                        help="the experiments' folder (default experiments/)")
    args = parser.parse_args()
    docs, experiments = args.docs.resolve(), args.experiments.resolve()
    problems = []
    documented = {}  # name -> (page, line) of every block in docs/
    texts = {}  # name -> text of each block of docs/experiments.md
    for page in sorted(docs.glob("*.md")):
        where = display(page)
        found = blocks(page, problems)
        if page == docs / "experiments.md":
            texts = {name: text for name, (_, _, text) in found.items()}
        for name, (number, script, _) in found.items():
            documented.setdefault(name, (page, number))
            run = run_script(experiments / name)
            if run is None:
                problems.append(f"{where}:{number}: the figures of {name}, but experiments/{name}/ has no run.py or "
                                "run.sh")
                continue
            expected = f"experiments/{name}/{run.name}"
            if script != expected:
                problems.append(f"{where}:{number}: the marker says the figures of {name} are written by {script}; "
                                f"its run script is {expected}")
            if name not in writer_names(run):
                call = f'common.write_figures("{name}", ...)' if run.suffix == ".py" else f"write_figures {name}"
                problems.append(f"{where}:{number}: the figures of {name}, but {expected} never writes them "
                                f"(no {call})")
    page = docs / "experiments.md"
    for folder in sorted(p for p in experiments.iterdir() if p.is_dir()):
        run = run_script(folder)
        for name in writer_names(run) if run else []:
            script = f"experiments/{folder.name}/{run.name}"
            if name != folder.name:
                problems.append(f"{script}: writes the figures of {name}, not of its own folder {folder.name}")
            elif documented.get(name, (None,))[0] != page:
                problems.append(f"{script}: writes the figures of {name}, but {display(page)} has no "
                                f"block for them ({common.figures_start(name, script)} ... "
                                f"{common.figures_end(name)})")
    quotes = sum(quoted_figures(quoting, page, texts, problems) for quoting in sorted(docs.glob("*.md"))
                 if quoting != page)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check_doc_figures: {len(problems)} problem{'s' if len(problems) != 1 else ''}", file=sys.stderr)
        return 1
    print(f"check_doc_figures: {len(documented)} figures blocks, each closed and written by its experiment's run "
          f"script, and every writer has its block; {quotes} figures quoted elsewhere, each as its run wrote it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
