#!/usr/bin/env bash
# Serve a class from several app replicas behind nginx on one machine (nginx from Debian: apt-get install nginx).
#
#   deploy/replicas.sh [REPLICAS] [PORT]      # default 2 replicas behind http://127.0.0.1:8080
#
# Each replica is `streamlit run streamlit_app.py` on 127.0.0.1:8501, 8502, ... (REPLICA_BASE_PORT + i) with
# the same cookie secret (the XSRF check of an upload must pass on whichever replica serves it), restarted when it
# exits. Ctrl-C stops nginx and every replica.
# For a lecturer's server, put TLS in front (or set `listen` in deploy/nginx.conf.template) and one replica per
# two cores: each replica decodes on at most two threads (app/serving/scheduler.py, MAX_CONCURRENT_TRANSLATIONS).
set -euo pipefail
cd "$(dirname "$0")/.."
REPLICAS=${1:-2}
PORT=${2:-8080}
PYTHON=${PYTHON:-.venv/bin/python}
BASE=${REPLICA_BASE_PORT:-8500}  # replica i listens on BASE + i
RUN=$(mktemp -d "${TMPDIR:-/tmp}/attention-explorer.XXXXXX")
SECRET=${STREAMLIT_SERVER_COOKIE_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
loops=()
stop() {
  for loop in "${loops[@]}"; do kill "$loop" 2>/dev/null || true; done  # no more restarts
  pkill -P "$(echo "${loops[@]}" | tr ' ' ',')" 2>/dev/null || true    # then the replicas themselves
  [ -f "$RUN/nginx.pid" ] && kill "$(cat "$RUN/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop EXIT INT TERM
replica() {  # one replica, restarted when it exits (a crash, an out-of-memory kill), as a supervisor would
  while true; do
    STREAMLIT_SERVER_COOKIE_SECRET=$SECRET "$PYTHON" -m streamlit run streamlit_app.py --server.address 127.0.0.1 \
      --server.port "$1" --server.headless true --browser.gatherUsageStats false >> "$RUN/replica-$1.log" 2>&1 || true
    echo "$(date -Is) replica on port $1 exited; restarting" >> "$RUN/replica-$1.log"
    sleep 1
  done
}
upstreams=""
for i in $(seq 1 "$REPLICAS"); do
  port=$((BASE + i))
  replica "$port" &
  loops+=($!)
  upstreams+="        server 127.0.0.1:$port max_fails=1 fail_timeout=10s;"$'\n'
done
for i in $(seq 1 "$REPLICAS"); do
  until curl -sf "http://127.0.0.1:$((BASE + i))/_stcore/health" >/dev/null; do sleep 0.5; done
done
awk -v up="$upstreams" -v port="$PORT" -v dir="$RUN" \
  '{gsub("@PORT@", port); gsub("@DIR@", dir); if ($0 ~ /^@UPSTREAMS@$/) printf "%s", up; else print}' \
  deploy/nginx.conf.template > "$RUN/nginx.conf"
replica_pids=$(for loop in "${loops[@]}"; do pgrep -P "$loop"; done | tr '\n' ',' | sed 's/,$//')
echo "replicas (pids $replica_pids, logs in $RUN) behind http://127.0.0.1:$PORT"
nginx -p "$RUN" -c "$RUN/nginx.conf" -g "daemon off;"
