# Sourced by test.sh (and so by .ci/run): the Debian packages the real-component tests drive.
# chromium for the browser test (Playwright never downloads a browser), postgresql for the JDBC
# tests (a server of its own per test run, see tests/pg_server.py). Installed when missing and we
# are root with apt-get; otherwise the run says loudly which tests will skip.
_missing=()
[ -x /usr/bin/chromium ] || _missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || _missing+=(postgresql)
if [ ${#_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing ${_missing[*]} for the browser and JDBC tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${_missing[@]}" >/dev/null
  else
    echo "!! not installed: ${_missing[*]} (apt-get install ${_missing[*]}); the tests that need them will be SKIPPED" >&2
  fi
fi
unset _missing
