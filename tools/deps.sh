#!/usr/bin/env bash
# make deps: the programs and local services that make test and make
# lint-deploy use beyond Go and the tools make builds itself. As root it
# installs the missing Debian packages (one apt-get update, one apt-get
# install) and starts PostgreSQL and Redis; as anyone else it names what is
# missing with the command that installs or starts it, and fails, so that no
# test runs without them (decision 0184).
set -euo pipefail

# Each program the tests or the lint run, with the Debian package that has it.
declare -A package_of=(
  [xmllint]=libxml2-utils        # the QTI export against the IMS XSDs
  [pgbouncer]=pgbouncer          # the transaction-pooling isolation test
  [chromium]=chromium            # the browser tests and the independent QTI player
  [pdfinfo]=poppler-utils        # answer-sheet scans in PDF
  [pdftoppm]=poppler-utils
  [promtool]=prometheus          # make lint-deploy
  [prometheus]=prometheus        # the dashboards' smoke test
  [redis-server]=redis-server    # the tests' private Redis servers
  [redis-cli]=redis-tools
  [initdb]=postgresql            # devenv's throwaway cluster
  [pg_ctlcluster]=postgresql
  [pg_isready]=postgresql
)
# Debian 12's nodejs is 18; the SDK and the npm tools want 20 or newer.
NODE_MAJOR=20
DATABASE_URL_TESTED=${TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres}

root() { [ "$(id -u)" -eq 0 ]; }

# have reports whether a program is installed: on PATH, in /usr/sbin (not on
# every user's PATH) or, for the PostgreSQL server programs, in Debian's
# versioned directory.
have() {
  command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] ||
    compgen -G "/usr/lib/postgresql/*/bin/$1" >/dev/null
}

missing_packages() {
  local program
  for program in "${!package_of[@]}"; do
    have "$program" || echo "${package_of[$program]}"
  done | sort -u | paste -sd ' ' -
}

# The Prometheus package recommends its node exporter, a daemon the checks
# do not use; no other package's recommendations are needed either.
install_packages() {
  echo "deps: installing $*"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

postgres_up() { pg_isready -q -d "$DATABASE_URL_TESTED"; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }

wait_for() {
  local _
  for _ in $(seq 1 60); do "$1" && return; sleep 0.5; done
  echo "deps: $2 did not start" >&2
  return 1
}

# The newest of the local PostgreSQL clusters.
start_postgres_command() {
  echo "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | sort -V | tail -n1) main start"
}

start_redis_command() {
  echo "mkdir -p /var/lib/redis /var/log/redis && redis-server --daemonize yes --bind 127.0.0.1 -::1" \
    "--port 6379 --save '' --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log"
}

# ensure runs $1 (is the service up?); if not, as root it runs the command
# $2 prints and waits for the service, else it prints that command.
ensure() {
  local up=$1 command=$2 name=$3
  "$up" && return
  if root; then
    echo "deps: starting $name"
    bash -c "$("$command")" && wait_for "$up" "$name"
    return
  fi
  echo "deps: $name does not answer; start it as root with: $("$command")" >&2
  return 1
}

# A TEST_DATABASE_URL elsewhere is checked, never started from here.
ensure_postgres() {
  if [ -z "${TEST_DATABASE_URL:-}" ]; then
    ensure postgres_up start_postgres_command "PostgreSQL at 127.0.0.1:5432"
  elif ! postgres_up; then
    echo "deps: PostgreSQL at TEST_DATABASE_URL does not answer" >&2
    return 1
  fi
}

node_ok() {
  have npm && have node && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge "$NODE_MAJOR" ]
}

main() {
  local missing failed=0
  if ! node_ok; then
    echo "deps: Node.js $NODE_MAJOR or newer with npm is missing (Debian 12's nodejs is older):" \
      "install it from nodejs.org or NodeSource" >&2
    failed=1
  fi
  missing=$(missing_packages)
  if [ -n "$missing" ]; then
    if ! root; then
      echo "deps: missing Debian packages: $missing; install them as root with:" \
        "apt-get update && apt-get install -y --no-install-recommends $missing" >&2
      return 1 # the services cannot be checked without their programs
    fi
    # shellcheck disable=SC2086 # one word per package
    install_packages $missing
  fi
  ensure_postgres || failed=1
  ensure redis_up start_redis_command "Redis at 127.0.0.1:6379" || failed=1
  return "$failed"
}

main
