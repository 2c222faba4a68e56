#!/usr/bin/env bash
# Regenerates every table of the article into results/ (CSV per command, SVG figures, results.txt).
# The test suite compares results/ byte for byte with a fresh regeneration; run this script after a
# change that moves the numbers on purpose, and say in the commit why they moved.
set -euo pipefail
cd "$(dirname "$0")/.."
time cargo run --release --example reproduce -- "${1:-results}"
