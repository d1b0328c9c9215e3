#!/usr/bin/env bash
# Trains the small text classifiers reproducibly inside a venv made from models/requirements.txt.
#
#   bash models/train.sh error-classifier     # or intent-router, or all (the default)
#   bash models/train.sh render               # only re-render eval-report.md from eval-report.json
#
# The venv lives in .infra/models-venv and is rebuilt when requirements.txt changes (PYTHON=python3.11
# picks the interpreter). Training is seeded and single-threaded: a re-run gives the same eval numbers.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.infra/models-venv"
req="$root/models/requirements.txt"
stamp="$venv/.installed-$(sha256sum "$req" | cut -c1-12)"
if [[ ! -f "$stamp" ]]; then
  echo "models/train.sh: preparing $venv from models/requirements.txt" >&2
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  touch "$stamp"
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0
exec "$venv/bin/python" "$root/models/train.py" "${@:-all}"
