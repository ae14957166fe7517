"""How many rows of the real tables and results in tests/data/real get a ceiling: each file imported as a
user would (tests/test_real_tables.py's GIVEN), then per file whether every pp and tg row has one, and the
reasons the others give (a serving result's row is its decode at its concurrency).

    python tests/benchmarks/real_tables.py [--per-file]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import pdx_here  # noqa: E402
from test_real_tables import CHIP, CLOSE, GIVEN, TABLES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-file", action="store_true", help="a line per file: its chip and each row's fraction")
    args = parser.parse_args()
    url = f"sqlite:///{tempfile.mkdtemp()}/registry.sqlite"
    judged = reasoned = above = whole = unfit = 0
    reasons: Counter = Counter()
    wrong_chip: list[str] = []
    for path in TABLES:
        done = json.loads(pdx_here("import", str(path), "--registry", url, "--json", *GIVEN.get(path.name[:2], [])))
        every = True
        for run_id in done["added"]:
            run = json.loads(pdx_here("show", run_id, "--registry", url, "--json"))
            if run["hardware"].get("catalog") != CHIP.get(path.name[:2], "?"):
                wrong_chip.append(f"{path.name[:40]}: {run['hardware'].get('catalog')}, not "
                                  f"{CHIP.get(path.name[:2], 'a chip said in CHIP')}")
            cells = []
            for test in run["tests"]:
                if test["kind"] not in ("pp", "tg", "pg", "serve") or test["status"] != "ok":
                    continue
                ceiling = test["ceilings"] or {}
                if ceiling.get("ceiling"):
                    judged += 1
                    above += ceiling["fraction"] > CLOSE
                    cells.append(f"{test['name']} {ceiling['fraction']:.0%}")
                else:
                    reasoned += 1
                    unfit += bool(ceiling.get("unfit"))
                    every = False
                    reasons[(run["ceiling_basis"].get("reason") or ceiling.get("missing") or "?")[:90]] += 1
                    cells.append(f"{test['name']} -")
            if args.per_file:
                print(f"{path.name[:44]:44} {run['hardware'].get('catalog') or '-':32} {', '.join(cells)[:120]}")
        whole += every
        if args.per_file and not done["added"]:
            print(f"{path.name[:44]:44} (no runs)")
    print(f"{len(TABLES)} files; {whole} with a ceiling on every pp and tg row")
    print(f"{judged + reasoned} rows: {judged} with a ceiling ({above} above {CLOSE} of it), {reasoned} with a reason "
          f"({unfit} not a result: cannot fit)")
    for reason, count in reasons.most_common():
        print(f"  {count:4} {reason}")
    wrong = list(dict.fromkeys(wrong_chip))  # a line per file, however many runs it holds
    print(f"chip as the post names it: {len(TABLES) - len(wrong)} of {len(TABLES)} files"
          + "".join(f"\n  {w}" for w in wrong))


if __name__ == "__main__":
    main()
