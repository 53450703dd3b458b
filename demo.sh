#!/usr/bin/env bash
# Set everything up (first run only) and run the main job. Extra arguments go to `mlsql-ray run`.
source "$(dirname "$0")/scripts/setup.sh"
cd "$ROOT"
exec mlsql-ray run notebooks/mnist_distributed.mlsql "$@"
