#!/usr/bin/env bash
# Rewrites every command output in docs/reproducing.md and docs/correctness.md,
# and the figure, from the `simulate` program as it is now. examples/tests/docs.rs
# fails until this is run after a change that moves a number.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p bully-examples --bin simulate
simulate=target/debug/simulate
python3 - "$simulate" <<'PY'
import re, subprocess, sys
simulate = sys.argv[1]
def replace(match):
    args = match.group(1).split()
    output = subprocess.run([simulate, *args], check=True, capture_output=True, text=True).stdout
    return f"{match.group(0).split('```text')[0]}```text\n{output}```"
pattern = re.compile(r"cargo run -p bully-examples --bin simulate -- ([^\n]*)\n```\n\n```text\n.*?```", re.S)
for path in ["docs/reproducing.md", "docs/correctness.md"]:
    doc = open(path).read()
    doc = pattern.sub(replace, doc)
    open(path, "w").write(doc)
PY
"$simulate" plot docs/messages.svg >/dev/null
