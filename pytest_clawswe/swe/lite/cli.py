"""`clawswe lite select|sweep`: build a Lite subset from your own calibration runs."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import write_atomic
from pytest_clawswe.swe.lite import data
from pytest_clawswe.swe.lite.data import Calibration, load_calibration
from pytest_clawswe.swe.lite.gates import SWEEP_KS, SWEEP_SEEDS, Gates, selection_report, sweep
from pytest_clawswe.swe.lite.selection import DEFAULT_K, DEFAULT_RESTARTS, Problem, Weights, select

_INPUT_HELP = data.__doc__.split("\n", 2)[2]  # the table formats, as the module documents them
_EXAMPLE = """
example:
    clawswe lite select reports/run-* --k 10 --out lite.txt --report lite.json
    pytest --harness openclaw --model MODEL --instances-file lite.txt
"""


def add_cli(subparsers) -> None:
    lite = subparsers.add_parser("lite", help="build a cost- and rank-aware Lite subset from calibration runs",
                                 description="Build a Lite subset (K per language) from calibration runs.")
    sub = lite.add_subparsers(dest="lite_command", required=True)
    formatter = argparse.RawDescriptionHelpFormatter

    sel = sub.add_parser("select", help="select K instances per language", formatter_class=formatter,
                         description="Select K instances per language that keep the calibration columns' "
                                     "resolve rates, ranking and costs.\n\n" + _INPUT_HELP + _EXAMPLE)
    _add_inputs(sel)
    sel.add_argument("--k", type=int, default=DEFAULT_K, help="instances per language (default %(default)s)")
    sel.add_argument("--restarts", type=int, default=DEFAULT_RESTARTS,
                     help="random starts per language (default %(default)s)")
    sel.add_argument("--seed", type=int, default=0, help="the same seed gives the same subset (default %(default)s)")
    sel.add_argument("--out", type=Path, help="write the ids here, one per line (usable as --instances-file); "
                                              "without it they go to standard output")
    sel.add_argument("--report", type=Path,
                     help="write the JSON report (ids, language, quartile, gates, objective terms)")
    sel.set_defaults(func=run_select)

    sw = sub.add_parser("sweep", help="find the smallest K that passes every gate", formatter_class=formatter,
                        description="Select at each K under several seeds and restart counts, gate every result, "
                                    "and report the smallest K whose every run passes.\n\n" + _INPUT_HELP)
    _add_inputs(sw)
    sw.add_argument("--ks", default=f"{SWEEP_KS[0]}-{SWEEP_KS[-1]}", help="K values: a range 4-12 or a list 6,8,10 "
                                                                         "(default %(default)s)")
    sw.add_argument("--restarts", type=int, default=DEFAULT_RESTARTS,
                    help="random starts per language; each seed also runs at half of it (default %(default)s)")
    sw.add_argument("--seed", type=int, default=0, help="first seed (default %(default)s)")
    sw.add_argument("--seeds", type=int, default=SWEEP_SEEDS, help="seeds per K (default %(default)s)")
    sw.add_argument("--report", type=Path, help="write the sweep as JSON")
    sw.set_defaults(func=run_sweep)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", metavar="RUN_DIR_OR_CSV",
                        help="calibration columns: run directories (one column each) and/or CSV tables")
    parser.add_argument("--pool", type=Path, help="select only among these ids (an --instances-file style list)")
    parser.add_argument("--rank-lambda", type=float, default=Weights.rank_lambda, help="weight of the ranking hinge "
                                                                                      "(default %(default)s)")
    parser.add_argument("--cost-alpha", type=float, default=Weights.cost_alpha,
                        help="weight of log-cost parity; 0 ignores cost (default %(default)s)")
    g = Gates()
    parser.add_argument("--gate-rate-mean", type=float, default=g.rate_mean, help="max mean |Lite - full| Pass@1 "
                                                                                  "over columns (default %(default)s)")
    parser.add_argument("--gate-rate-max", type=float, default=g.rate_max, help="max |Lite - full| Pass@1 of any "
                                                                                "column (default %(default)s)")
    parser.add_argument("--gate-pair-agreement", type=float, default=g.pair_agreement,
                        help="min share of ordered column pairs kept in order (default %(default)s)")
    parser.add_argument("--gate-kendall-tau", type=float, default=g.kendall_tau, help="min Kendall tau-b of the "
                                                                                      "columns (default %(default)s)")
    parser.add_argument("--gate-cost-dev", type=float, default=g.cost_dev, help="max |cost ratio / instance ratio - 1| "
                                                                                "of any column (default %(default)s)")


def _calibration(args) -> Calibration:
    cal = load_calibration(args.sources)
    if args.pool:
        from pytest_clawswe.errors import DatasetError
        from pytest_clawswe.swe.dataset import read_instances_file

        try:
            wanted = set(read_instances_file(args.pool))
        except DatasetError as exc:
            raise UserError(str(exc)) from None
        unknown = sorted(wanted - set(cal.instance_ids))
        if unknown:
            raise UserError(f"{len(unknown)} ids in --pool have no calibration results (first: {unknown[0]}); "
                            "run the columns on them or drop them from the pool")
        keep = np.array([iid in wanted for iid in cal.instance_ids])
        cal = Calibration([i for i, k in zip(cal.instance_ids, keep) if k], cal.languages[keep], cal.columns,
                          cal.resolved[keep], cal.cost[keep])
    return cal


def _weights(args) -> Weights:
    return Weights(rank_lambda=args.rank_lambda, cost_alpha=args.cost_alpha)


def _gates(args) -> Gates:
    return Gates(args.gate_rate_mean, args.gate_rate_max, args.gate_pair_agreement, args.gate_kendall_tau,
                 args.gate_cost_dev)


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def gate_lines(gates: dict) -> list[str]:
    r, k, c = gates["rate_parity"], gates["ranking"], gates["cost"]
    tau = "n/a" if k["kendall_tau"] is None else f"{k['kendall_tau']:.3f}"
    agree = "n/a" if k["pair_agreement"] is None else f"{k['pair_agreement']:.3f}"
    return [
        f"  rate parity  {_verdict(r['passed'])}  mean |diff| {100 * r['mean_abs_diff']:.2f} pp, "
        f"max {100 * r['max_abs_diff']:.2f} pp ({r['worst_column']})",
        f"  ranking      {_verdict(k['passed'])}  pair agreement {agree} over {k['ordered_pairs']} pairs, "
        f"Kendall tau {tau}",
        f"  cost         {_verdict(c['passed'])}  total cost ratio {_pct(c['total_cost_ratio'])} vs instance ratio "
        f"{_pct(c['instance_ratio'])}, worst column off by {_pct(c['max_column_dev'])}",
    ]


def ids_text(report: dict) -> str:
    m = report["method"]
    lines = [f"# Lite subset: K={m['k_per_language']} per language, quartile quota "
             f"{'/'.join(map(str, m['quartile_quota']))}, {len(report['instances'])} instances",
             f"# from {len(report['calibration']['columns'])} columns x {report['calibration']['pool']} instances; "
             f"seed {m['seed']}, {m['restarts']} restarts; gates {_verdict(report['gates']['passed'])}",
             "# written by `clawswe lite select`"]
    language = None
    for row in report["instances"]:
        if row["language"] != language:
            language = row["language"]
            lines.append(f"# {language}")
        lines.append(row["instance_id"])
    return "\n".join(lines) + "\n"


def run_select(args) -> int:
    cal = _calibration(args)
    sel = select(cal, args.k, args.restarts, args.seed, _weights(args))
    report = selection_report(sel, _gates(args))
    if args.report:
        write_atomic(args.report, json.dumps(report, indent=1) + "\n")
    if args.out:
        write_atomic(args.out, ids_text(report))
    else:
        sys.stdout.write(ids_text(report))
    o, base = report["objective"], report["random_baseline"]
    p = sel.problem
    info = sys.stdout if args.out else sys.stderr  # keep stdout clean when it carries the ids
    print(f"selected {len(report['instances'])} instances: K={p.k} x {len(p.langs)} languages, quota "
          f"{'/'.join(map(str, p.quota))}, from {p.n_pool} instances x {len(cal.columns)} columns "
          f"in {sel.seconds:.2f} s", file=info)
    if p.excluded:
        print(f"left out {len(p.excluded)} instances with no outcome in any column", file=info)
    print(f"objective {o['total']:.4f} = parity {o['parity']:.4f} + {p.w.rank_lambda:g} x ranking {o['ranking']:.4f} "
          f"+ {p.w.cost_alpha:g} x cost {o['cost']:.4f}   (random subsets: median {base['median']:.4f}, "
          f"best of {base['subsets']} {base['best']:.4f})", file=info)
    print(f"gates {_verdict(report['gates']['passed'])}", file=info)
    print("\n".join(gate_lines(report["gates"])), file=info)
    for path in (args.out, args.report):
        if path:
            print(f"wrote {path}", file=info)
    return 0


def _parse_ks(text: str) -> list[int]:
    try:
        if "-" in text:
            low, high = (int(x) for x in text.split("-", 1))
            ks = list(range(low, high + 1))
        else:
            ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--ks {text!r} is not a range like 4-12 or a list like 6,8,10") from None
    if not ks or min(ks) < 1:
        raise UserError(f"--ks {text!r} must name at least one K, each at least 1")
    return ks


def run_sweep(args) -> int:
    ks = _parse_ks(args.ks)
    cal = _calibration(args)
    Problem(cal, min(ks))  # if the smallest K does not fit, none does: say why now, as an error
    result = sweep(cal, ks, args.restarts, args.seed, args.seeds, _weights(args), _gates(args))
    if args.report:
        write_atomic(args.report, json.dumps(result, indent=1) + "\n")
    print(f"K-sweep over {len(cal.columns)} columns x {len(cal.instance_ids)} instances, "
          f"{len(result['perturbations'])} runs per K (seeds x restarts)")
    print(f"{'K':>3} {'passed':>7} {'rate mean':>10} {'rate max':>9} {'pairs':>6} {'tau':>6} {'cost dev':>9} {'s':>6}")
    for row in result["ks"]:
        if not row["feasible"]:
            print(f"{row['k']:>3}  infeasible: {row['reason']}")
            continue
        w = row["worst"]
        fmt = lambda v, spec: "n/a" if v is None else format(v, spec)  # noqa: E731
        print(f"{row['k']:>3} {row['passed_runs']:>3}/{row['runs']:<3} {fmt(w['rate_mean_abs_diff'] * 100, '9.2f')}pp "
              f"{fmt(w['rate_max_abs_diff'] * 100, '7.2f')}pp {fmt(w['pair_agreement'], '6.3f')} "
              f"{fmt(w['kendall_tau'], '6.3f')} {fmt(w['cost_max_column_dev'], '9.3f')} {row['seconds']:6.1f}")
    print("(worst value over the runs of each K)")
    if result["k_star"] is None:
        print("no K passed every gate in every run: widen --ks, add calibration columns, or relax the gates")
        return 1
    print(f"K* = {result['k_star']}: the smallest K whose every run passes all gates")
    if args.report:
        print(f"wrote {args.report}")
    return 0
