"""Writes the generated sets of the count, claim and severity losses: an
insurance portfolio whose claim frequency and severity follow a documented
process, as Parquet train/test pairs in data/ (80/20, seeded).

usage: python data/make_claims.py [OUT_DIR]     (default: the directory of this file)
needs: numpy, pyarrow

The process (one row per policy, 100,000 policies):
- features: driver_age uniform 18-80, vehicle_age exponential (mean 6, at most
  30), vehicle_power integer 4-15, bonus_malus 50-150 (skewed low), density
  log-uniform 10-20,000 people per km², exposure uniform 0.1-1 year, area
  (string, A-F) and fuel (string, diesel/regular);
- claim frequency: lambda = exposure * exp(-2.2 + 0.9 * young + 0.25 * old
  + 0.012 * (bonus_malus - 100) + 0.15 * ln(density/1000) + 0.06 * (power - 8)
  + area effect + 0.1 * diesel), young = driver_age < 25, old = driver_age > 70;
- severity: gamma with shape 2 and mean exp(7.5 + 0.04 * vehicle_power
  - 0.02 * vehicle_age + 0.3 * young), per claim.

Sets (label column `label`):
- counts_reg: the number of claims, Poisson(lambda) (loss=poisson);
- claims_reg: the total claim amount of the policy, the sum of its claims'
  severities (0 without a claim: a compound Poisson-gamma, loss=tweedie);
- severity_reg: the mean severity of the policies with a claim (loss=gamma),
  from a portfolio of its own of 400,000 policies: about 24,000 rows.
"""
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N = 100_000
AREAS = np.array(list("ABCDEF"))
AREA_EFFECT = np.array([-0.3, -0.15, 0.0, 0.1, 0.2, 0.35])


def portfolio(rng, n=N):
    N = n  # noqa: N806 (the number of policies)
    driver_age = rng.uniform(18, 80, N)
    vehicle_age = np.minimum(rng.exponential(6.0, N), 30.0)
    vehicle_power = rng.integers(4, 16, N).astype(np.float64)
    bonus_malus = 50 + 100 * rng.beta(1.2, 4.0, N)
    density = np.exp(rng.uniform(np.log(10), np.log(20_000), N))
    exposure = rng.uniform(0.1, 1.0, N)
    area = rng.integers(0, len(AREAS), N)
    diesel = rng.random(N) < 0.45
    young, old = driver_age < 25, driver_age > 70
    log_rate = (-2.2 + 0.9 * young + 0.25 * old + 0.012 * (bonus_malus - 100) + 0.15 * np.log(density / 1000)
                + 0.06 * (vehicle_power - 8) + AREA_EFFECT[area] + 0.1 * diesel)
    counts = rng.poisson(exposure * np.exp(log_rate))
    mean_severity = np.exp(7.5 + 0.04 * vehicle_power - 0.02 * vehicle_age + 0.3 * young)
    shape = 2.0
    # The sum of k gamma(shape, scale) claims is gamma(k * shape, scale).
    amount = np.where(counts > 0, rng.gamma(np.maximum(counts, 1) * shape, mean_severity / shape), 0.0)
    features = {
        "driver_age": driver_age.round(1),
        "vehicle_age": vehicle_age.round(1),
        "vehicle_power": vehicle_power,
        "bonus_malus": bonus_malus.round(0),
        "density": density.round(0),
        "exposure": exposure.round(3),
        "area": AREAS[area],
        "fuel": np.where(diesel, "diesel", "regular"),
    }
    return features, counts.astype(np.float64), amount


def write(out, name, features, label, rng):
    table = pa.table({**{k: pa.array(v) for k, v in features.items()}, "label": pa.array(label)})
    order = rng.permutation(table.num_rows)
    cut = int(table.num_rows * 0.8)
    pq.write_table(table.take(order[:cut]), out / f"{name}_train.parquet")
    pq.write_table(table.take(order[cut:]), out / f"{name}_test.parquet")


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    rng = np.random.default_rng(2026)
    features, counts, amount = portfolio(rng)
    write(out, "counts_reg", features, counts, rng)
    write(out, "claims_reg", features, amount, rng)
    # Severity from a portfolio of its own, four times larger, so its set of
    # claimed policies is large enough for a held-out deviance to mean something.
    features, counts, amount = portfolio(rng, 4 * N)
    claimed = counts > 0
    severity = {k: v[claimed] for k, v in features.items()}
    write(out, "severity_reg", severity, amount[claimed] / counts[claimed], rng)


if __name__ == "__main__":
    main()
