# Sourced by demo.sh and test.sh: make .venv with the project and its dev extras installed.
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "mlsql-ray needs Python 3.11 or newer; $PYTHON is $("$PYTHON" --version 2>&1). Set PYTHON=..." >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.mlsql-ray-installed"
want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "==> installing mlsql-ray and its dependencies into $VENV (first time: a few minutes)"
  # uv installs the same versions as pip (it is given pip's constraint file and find-links) in a
  # quarter of the time: downloads and unpacking in parallel. pip is the fallback.
  uv_options=(--quiet --compile-bytecode --python "$VENV/bin/python")
  while IFS='=' read -r key value; do  # lines like global.constraint='/etc/xdg/pip/constraints.txt'
    value="${value#\'}"; value="${value%\'}"
    case "${key#*.}" in
      constraint|find-links) for one in $value; do uv_options+=("--${key#*.}" "$one"); done ;;
    esac
  done < <("$VENV/bin/python" -m pip config list 2>/dev/null || true)
  if "$VENV/bin/python" -m pip install --quiet uv && "$VENV/bin/uv" pip install "${uv_options[@]}" -e "$ROOT[dev]"; then
    :
  else
    echo "==> uv could not install; installing with pip" >&2
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[dev]"
  fi
  unset uv_options key value one
  echo "$want" > "$stamp"
fi
# An editable install carries no wheel data: register the Jupyter kernel `mlsql` in the venv here,
# and link the JupyterLab extension with the MLSQL mode (labextension/, built) where JupyterLab looks.
if [ ! -f "$VENV/share/jupyter/kernels/mlsql/kernel.json" ]; then
  "$VENV/bin/python" -m mlsql_ray.kernel install --sys-prefix >/dev/null
fi
labextension="$VENV/share/jupyter/labextensions/mlsql-ray-lang"
if [ -L "$labextension" ] || [ ! -e "$labextension" ]; then  # not a wheel's copy: (re)link this checkout's
  mkdir -p "$(dirname "$labextension")"
  ln -sfn "$ROOT/labextension/mlsql-ray-lang" "$labextension"
fi
unset labextension
export PATH="$VENV/bin:$PATH"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
