"""Lite selection (paper §3.2): difficulty quartiles, the objective, and the restarted 1-swap search.

Hard constraints: K instances per language, split over the language's difficulty quartiles by a fixed
quota (2/3/3/2 at K=10). Quartiles come from each instance's mean resolved rate over the calibration
columns, ranked within its language (Q1 easiest).

Objective (lower is better), each term a mean so that its weight does not depend on how many columns
or languages there are (the paper gives the weights but not the normalisation):
  parity   mean over column x language cells of |Lite resolve rate - full resolve rate|
  ranking  mean over column pairs that differ by more than RANK_EPS on the full set of
           max(0, RANK_MARGIN - Lite gap in the full set's direction): a reversed or too-close pair costs
  cost     mean over columns of |log(Lite mean cost / full mean cost)|, i.e. the column's cost ratio
           against the instance ratio
  total    parity + RANK_LAMBDA * ranking + COST_ALPHA * cost

Search, in two stages, both by steepest-descent 1-swaps inside a quartile:
  1. per language, RESTARTS random quota-respecting starts descend on the language's own view of the
     objective, with the other languages standing at their expected full-set values (so the languages
     are independent and each is a small batched problem);
  2. the POLISH_STARTS best of each language, the i-th best of every language making joint start i,
     descend on the exact objective, language by language, until no swap helps; the best one wins.
Stage 2 is where the languages' deviations learn to cancel; stage 1 gives it good, varied starts.
All randomness comes from one seed, so the same seed gives the same subset.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pytest_clawswe.errors import UserError
from pytest_clawswe.swe.lite.data import Calibration

RANK_EPS = 0.03  # full-set gap at or below which a column pair counts as a tie, not an order
RANK_MARGIN = 0.05  # Lite must keep an ordered pair at least this far apart
RANK_LAMBDA = 1.0
COST_ALPHA = 1.0
QUOTA_AT_10 = (2, 3, 3, 2)  # per language, Q1 (easiest) .. Q4 (hardest), at K=10
DEFAULT_K = 10
DEFAULT_RESTARTS = 200
POLISH_STARTS = 64

_MIDDLE_FIRST = (1, 2, 0, 3)  # which quartile gets a rounding tie: keeps the quota centre-heavy like 2/3/3/2
_DTYPE = np.float32  # the search's arrays: half the memory traffic of float64, ample precision for it
_IMPROVE_TOL = 1e-6  # far above float32 rounding of an objective of order 0.01-1, so no move cycles
_MAX_POLISH_PASSES = 50
_COST_FLOOR = 1e-6  # relative to the full mean: keeps the log finite when a subset's known cost is 0
_S, _N, _CS, _CN = range(4)  # rows of an aggregate: resolved sum, outcome count, cost sum, cost count


@dataclass(frozen=True)
class Weights:
    rank_eps: float = RANK_EPS
    rank_margin: float = RANK_MARGIN
    rank_lambda: float = RANK_LAMBDA
    cost_alpha: float = COST_ALPHA


def quartile_quota(k: int) -> tuple[int, ...]:
    """Per-quartile counts for K per language: 2/3/3/2 scaled to K by largest remainder."""
    if k < 1:
        raise UserError(f"K must be at least 1 (got {k})")
    tenths = [k * q for q in QUOTA_AT_10]  # sum(QUOTA_AT_10) == 10
    quota = [t // 10 for t in tenths]
    order = sorted(range(4), key=lambda q: (-(tenths[q] % 10), _MIDDLE_FIRST.index(q)))
    for q in order[: k - sum(quota)]:
        quota[q] += 1
    return tuple(quota)


@dataclass
class _Language:
    name: str
    members: np.ndarray  # calibration rows, easiest first; a quartile is a contiguous block
    quartile: np.ndarray  # 0..3 per member
    X: np.ndarray  # (members, 4, columns): what each member adds to an aggregate
    blocks: list[tuple[int, int]]  # (start, end) of each quartile's positions
    chosen: np.ndarray  # positions of a permutation that are selected: the first `quota` of each block
    out_pos: np.ndarray  # a 1-swap exchanges a selected position with an unselected one of its block
    in_pos: np.ndarray


class Problem:
    """A calibration prepared for one K: quartiles, full-set targets, and the moves of the search."""

    def __init__(self, cal: Calibration, k: int, weights: Weights = Weights()):
        self.cal, self.k, self.w = cal, k, weights
        self.quota = quartile_quota(k)
        self.difficulty = cal.difficulty()
        pool = ~np.isnan(self.difficulty)
        self.excluded = [iid for iid, ok in zip(cal.instance_ids, pool) if not ok]
        known, cknown = ~np.isnan(cal.resolved), ~np.isnan(cal.cost)
        X = np.stack([np.where(known, cal.resolved, 0.0), known, np.where(cknown, cal.cost, 0.0), cknown], axis=1)
        ids = np.asarray(cal.instance_ids, dtype=object)
        self.langs = []
        for name in sorted(set(cal.languages[pool])):
            rows = np.flatnonzero(pool & (cal.languages == name))
            rows = rows[np.lexsort((ids[rows], -self.difficulty[rows]))]  # easiest first, ties by id
            self.langs.append(self._language(name, rows, X[rows]))
        self.n_pool = int(pool.sum())

        per_lang = np.stack([X[lang.members].sum(axis=0) for lang in self.langs])  # (L, 4, C), float64
        self.cell_valid = per_lang[:, _N] > 0
        self.cell_rate = per_lang[:, _S] / np.maximum(per_lang[:, _N], 1)
        self.n_cells = max(int(self.cell_valid.sum()), 1)
        total = per_lang.sum(axis=0)
        self.full_rate = total[_S] / np.maximum(total[_N], 1)
        a, b = np.triu_indices(len(cal.columns), 1)
        gap = self.full_rate[a] - self.full_rate[b]
        ordered = np.abs(gap) > weights.rank_eps
        self.pair_a, self.pair_b, self.pair_sign = a[ordered], b[ordered], np.sign(gap[ordered])
        # rates @ pair_matrix = each ordered pair's Lite gap, signed so that positive keeps the full order
        self.pair_matrix = np.zeros((len(cal.columns), len(self.pair_a)), dtype=_DTYPE)
        self.pair_matrix[self.pair_a, np.arange(len(self.pair_a))] = self.pair_sign
        self.pair_matrix[self.pair_b, np.arange(len(self.pair_a))] = -self.pair_sign
        full_cost = total[_CS] / np.maximum(total[_CN], 1)
        self.cost_weight = ((total[_CN] > 0) & (full_cost > 0)).astype(float)  # columns without costs: out
        if self.cost_weight.any():
            self.cost_weight /= self.cost_weight.sum()
        self.full_cost = np.where(full_cost > 0, full_cost, 1.0)
        # what a language contributes if its Lite part matched its full-set rates and costs exactly
        sizes = np.array([len(lang.members) for lang in self.langs], dtype=float)
        self.expected = (per_lang * (k / sizes)[:, None, None]).astype(_DTYPE)
        self.cell_rate, self.full_cost, self.cost_weight = (
            arr.astype(_DTYPE) for arr in (self.cell_rate, self.full_cost, self.cost_weight))

    def _language(self, name: str, rows: np.ndarray, X: np.ndarray) -> _Language:
        n = len(rows)
        quartile = (4 * np.arange(n)) // n
        blocks, chosen, out_pos, in_pos = [], [], [], []
        for q, need in enumerate(self.quota):
            start, end = np.searchsorted(quartile, q), np.searchsorted(quartile, q, side="right")
            if end - start < need:
                most = max((kk for kk in range(1, self.k) if _fits(n, quartile_quota(kk))), default=0)
                raise UserError(f"language {name} has {n} usable instances, too few for K={self.k} with quota "
                                f"{'/'.join(map(str, self.quota))} over its quartiles; use K of at most {most} "
                                "or leave the language out with --pool")
            blocks.append((start, end))
            chosen.append(np.arange(start, start + need))
            o, i = np.meshgrid(np.arange(start, start + need), np.arange(start + need, end), indexing="ij")
            out_pos.append(o.ravel())
            in_pos.append(i.ravel())
        return _Language(name, rows, quartile, X.astype(_DTYPE), blocks, np.concatenate(chosen),
                         np.concatenate(out_pos), np.concatenate(in_pos))

    # -- objective ---------------------------------------------------------------------------------

    def _cell_parity(self, li: int, own: np.ndarray) -> np.ndarray:
        s, n = own[..., _S, :], own[..., _N, :]
        dev = np.where(n > 0, np.abs(s / np.maximum(n, 1) - self.cell_rate[li]), _DTYPE(1))  # unmeasured cell: worst
        return (dev * self.cell_valid[li]).sum(axis=-1) / self.n_cells

    def _global_terms(self, agg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        shape = agg.shape[:-2]
        ranking = np.zeros(shape)
        if len(self.pair_a):
            rate = agg[..., _S, :] / np.maximum(agg[..., _N, :], _DTYPE(1e-12))
            shortfall = rate @ self.pair_matrix
            np.subtract(_DTYPE(self.w.rank_margin), shortfall, out=shortfall)
            ranking = np.maximum(shortfall, _DTYPE(0), out=shortfall).mean(axis=-1)
        ratio = agg[..., _CS, :] / np.maximum(agg[..., _CN, :], _DTYPE(1e-12)) / self.full_cost
        np.maximum(ratio, _DTYPE(_COST_FLOOR), out=ratio)
        cost = np.abs(np.log(ratio, out=ratio), out=ratio) @ self.cost_weight
        return ranking, cost

    def _objective(self, li: int, own: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Objective as seen from language li: its parity cells plus the global terms (others fixed at base)."""
        ranking, cost = self._global_terms(own + base)
        return self._cell_parity(li, own) + self.w.rank_lambda * ranking + self.w.cost_alpha * cost

    def _terms(self, owns: list[np.ndarray]) -> dict[str, np.ndarray]:
        parity = sum(self._cell_parity(li, own) for li, own in enumerate(owns))
        ranking, cost = self._global_terms(sum(owns))
        total = parity + self.w.rank_lambda * ranking + self.w.cost_alpha * cost
        return {"total": total, "parity": parity, "ranking": ranking, "cost": cost}

    def terms(self, selected: np.ndarray) -> dict[str, float]:
        """Exact objective terms of a selection (boolean mask over the calibration rows)."""
        owns = [lang.X[selected[lang.members]].sum(axis=0) for lang in self.langs]
        return {name: float(value) for name, value in self._terms(owns).items()}

    # -- search ------------------------------------------------------------------------------------

    def _descend(self, li: int, perm: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Steepest-descent within-quartile 1-swaps of language li, in place on a batch of permutations.

        base (B, 4, C) is what the other languages add to each row's aggregate. Returns the rows' final
        own aggregates and objectives.
        """
        lang = self.langs[li]
        own = lang.X[perm[:, lang.chosen]].sum(axis=1)  # (B, 4, C)
        current = self._objective(li, own, base)
        active = np.arange(len(perm)) if len(lang.out_pos) else np.arange(0)
        while len(active):
            p = perm[active]
            delta = lang.X[p[:, lang.in_pos]] - lang.X[p[:, lang.out_pos]]  # (b, moves, 4, C)
            obj = self._objective(li, own[active, None] + delta, base[active, None])
            best = obj.argmin(axis=1)
            step = np.arange(len(active))
            better = obj[step, best] < current[active] - _IMPROVE_TOL
            rows, move = active[better], best[better]
            o, i = lang.out_pos[move], lang.in_pos[move]
            perm[rows, o], perm[rows, i] = perm[rows, i], perm[rows, o]
            own[rows] = lang.X[perm[rows][:, lang.chosen]].sum(axis=1)  # re-summed: no float32 drift
            current[rows] = obj[step[better], move]
            active = rows
        return own, current

    def random_permutations(self, li: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """`count` random quota-respecting starts for language li (members shuffled within quartiles)."""
        lang = self.langs[li]
        perm = np.empty((count, len(lang.members)), dtype=np.intp)
        for start, end in lang.blocks:
            perm[:, start:end] = rng.permuted(np.tile(np.arange(start, end), (count, 1)), axis=1)
        return perm

    def mask(self, perms: list[np.ndarray]) -> np.ndarray:
        """Selection mask over the calibration rows from one permutation per language."""
        selected = np.zeros(len(self.cal.instance_ids), dtype=bool)
        for lang, perm in zip(self.langs, perms):
            selected[lang.members[perm[lang.chosen]]] = True
        return selected

    def search(self, restarts: int = DEFAULT_RESTARTS, seed: int = 0) -> np.ndarray:
        """The selection mask found by the restarted local search; the same seed gives the same mask."""
        if restarts < 1:
            raise UserError(f"restarts must be at least 1 (got {restarts})")
        expected_total = self.expected.sum(axis=0)
        rngs = np.random.default_rng(seed).spawn(len(self.langs))
        starts = []
        for li, rng in enumerate(rngs):
            perm = self.random_permutations(li, restarts, rng)
            base = np.broadcast_to(expected_total - self.expected[li], (restarts, *expected_total.shape))
            _, final = self._descend(li, perm, base)
            starts.append(perm[np.argsort(final, kind="stable")[:POLISH_STARTS]])
        owns = [lang.X[p[:, lang.chosen]].sum(axis=1) for lang, p in zip(self.langs, starts)]
        for _ in range(_MAX_POLISH_PASSES):
            before = [p.copy() for p in starts]
            for li in range(len(self.langs)):
                owns[li], _ = self._descend(li, starts[li], sum(owns) - owns[li])
            if all(np.array_equal(a, b) for a, b in zip(before, starts)):
                break
        best = int(self._terms(owns)["total"].argmin())
        return self.mask([p[best] for p in starts])

    def random_mask(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random selection with the same quotas: the baseline the search must beat."""
        return self.mask([self.random_permutations(li, 1, rng)[0] for li in range(len(self.langs))])


def _fits(n: int, quota: tuple[int, ...]) -> bool:
    quartile = (4 * np.arange(n)) // n
    return all((quartile == q).sum() >= need for q, need in enumerate(quota))


@dataclass
class Selection:
    """A chosen subset and what it scored."""

    problem: Problem
    selected: np.ndarray  # mask over the calibration rows
    restarts: int
    seed: int
    seconds: float

    def rows(self) -> list[dict]:
        out = []
        for lang in self.problem.langs:
            for pos, row in enumerate(lang.members):
                if self.selected[row]:
                    out.append({"instance_id": self.problem.cal.instance_ids[row], "language": lang.name,
                                "quartile": int(lang.quartile[pos]) + 1,
                                "difficulty": round(float(self.problem.difficulty[row]), 4)})
        return sorted(out, key=lambda r: (r["language"], r["quartile"], r["instance_id"]))

    @property
    def instance_ids(self) -> list[str]:
        return [r["instance_id"] for r in self.rows()]

    def objective(self) -> dict[str, float]:
        return self.problem.terms(self.selected)


def select(cal: Calibration, k: int = DEFAULT_K, restarts: int = DEFAULT_RESTARTS, seed: int = 0,
           weights: Weights = Weights(), problem: Problem | None = None) -> Selection:
    """Select K instances per language from a calibration (pass `problem` to reuse one across seeds)."""
    started = time.perf_counter()
    problem = problem or Problem(cal, k, weights)
    selected = problem.search(restarts, seed)
    return Selection(problem, selected, restarts, seed, time.perf_counter() - started)
