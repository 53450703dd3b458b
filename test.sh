#!/usr/bin/env bash
# Set everything up (first run only) and run the whole test suite. Extra arguments go to pytest.
source "$(dirname "$0")/scripts/setup.sh"
source "$ROOT/scripts/system-packages.sh"
cd "$ROOT"
exec python -m pytest "$@"
