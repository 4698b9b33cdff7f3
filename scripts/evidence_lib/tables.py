"""The generated tables: every table's generator by name, and the rewriting
(or checking) of what stands between the markers in docs/*.md."""
import glob
import os
import re
import subprocess
import tempfile

from .baselines import table_baselines, table_training_curve
from .comm import table_comm
from .common import DOCS, ROOT, fail, read_records
from .durations import table_durations
from .faults import table_faults_cases, table_faults_summary
from .fuzz import table_fuzz
from .micro import MICRO, table_flood, table_micro
from .p4 import table_p4
from .policies import PAPER_SCALE, table_policies
from .python_api import table_python_vs_cpp, table_pytorch
from .sanitizers import table_sanitizers
from .scale import table_scale
from .soak import table_soak
from .validation import table_validation


def generators():
    gens = {"demo-real": table_policies("demo-real", "demo", 1.0),
            "demo-real-slowdown-floor": table_policies("demo-real", "slowdown-floor", 1.0),
            "demo-real-straggler": table_policies("demo-real", "straggler", 1.0, waits=True,
                                                  per_rank=True),
            "demo-real-gloo": table_baselines,
            "training-curve": table_training_curve,
            "pytorch-n4": table_pytorch,
            "python-vs-cpp": table_python_vs_cpp,
            "soak": table_soak,
            "fuzz": table_fuzz,
            "sanitizers": table_sanitizers,
            "comm": table_comm,
            "sim-validation-n4": table_validation("n4"),
            "sim-validation-n8": table_validation("n8"),
            "sim-validation-n4-floor": table_validation("n4-floor"),
            "sim-validation-n8-floor": table_validation("n8-floor")}
    for scenario in sorted({r["scenario"] for r in read_records("policies-sim")} |
                           {"demo", "paper", "heterogeneous", "failure", "momentum", "slowdown",
                            "comego",
                            "cnn"}):
        gens[f"policies-sim-{scenario}"] = table_policies("policies-sim", scenario, 1.05,
                                                           waits=True)
    for binary in MICRO:
        gens[f"micro-{binary}"] = table_micro(binary)
    gens["micro-flood_bench"] = table_flood
    gens["scale"] = table_scale
    gens["faults-summary"] = table_faults_summary
    gens["faults-cases"] = table_faults_cases
    gens["p4-verified"] = table_p4
    gens["durations"] = table_durations
    for scenario in PAPER_SCALE:
        gens[f"paper-scale-{scenario}"] = table_policies("paper-scale", scenario, 1.05,
                                                         waits=True)
    return gens


MARKER = re.compile(r"(<!-- generated: ([\w.-]+) -->\n)(.*?)(<!-- /generated: \2 -->)", re.S)


def regenerate(text, gens, path, unknown):
    def sub(m):
        name = m.group(2)
        if name not in gens:
            unknown.append(f"{os.path.relpath(path, ROOT)}: {name}")
            return m.group(0)
        body = "\n".join(gens[name]()) + "\n"
        return m.group(1) + body + m.group(4)
    return MARKER.sub(sub, text)


def tables(args):
    gens = generators()
    unknown, stale = [], []
    for path in sorted(glob.glob(os.path.join(DOCS, "*.md"))):
        with open(path) as f:
            text = f.read()
        new = regenerate(text, gens, path, unknown)
        if new == text:
            continue
        if args.check:
            stale.append(path)
            with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as tmp:
                tmp.write(new)
            subprocess.run(["diff", "-u", path, tmp.name])
            os.unlink(tmp.name)
        else:
            with open(path, "w") as f:
                f.write(new)
            print(f"evidence: tables rewritten in {os.path.relpath(path, ROOT)}")
    if unknown:
        fail("unknown generated tables (no generator of that name): " + ", ".join(unknown))
    if stale:
        fail("tables differ from what docs/data gives: " +
             ", ".join(os.path.relpath(p, ROOT) for p in stale) +
             " (run /usr/bin/python3 scripts/evidence.py tables)")
