#!/usr/bin/env bash
# Serve a class from several app replicas behind nginx on one machine (nginx from Debian: apt-get install nginx).
#
#   deploy/replicas.sh [REPLICAS] [PORT]      # default 2 replicas behind http://127.0.0.1:8080
#
# Each replica is `streamlit run streamlit_app.py` on 127.0.0.1:8501, 8502, ... (REPLICA_BASE_PORT + i) with
# the same cookie secret (the XSRF check of an upload must pass on whichever replica serves it), restarted when it
# exits. Ctrl-C, TERM or HUP to this script, or nginx exiting, stops nginx and every replica (each within 8 s,
# killed after that) before the script exits.
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
nginx=""
STOP_S=8  # how long a replica or nginx may take to shut down before it is killed
stop() {  # stop every replica (its loop first, so nothing restarts it) and nginx, and wait until they are gone
  trap '' INT TERM HUP  # a second Ctrl-C does not cut the cleanup short
  trap - EXIT
  local pids=("${loops[@]}") deadline=$((SECONDS + STOP_S))
  [ -n "$nginx" ] && pids+=("$nginx")
  [ ${#pids[@]} -eq 0 ] && return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  while kill -0 "${pids[@]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  for file in "$RUN"/replica-*.pid; do  # a replica that outlived its loop's TERM
    [ -f "$file" ] && kill -KILL "$(cat "$file")" 2>/dev/null || true
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap 'stop; exit 129' HUP
trap stop EXIT
replica() {  # one replica, restarted when it exits (a crash, an out-of-memory kill), as a supervisor would
  local child=""
  # TERM from stop(): end the replica and wait for it, so no replica outlives its loop
  trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; [ -n "$child" ] && wait "$child" 2>/dev/null; exit 0' TERM
  while true; do
    STREAMLIT_SERVER_COOKIE_SECRET=$SECRET "$PYTHON" -m streamlit run streamlit_app.py --server.address 127.0.0.1 \
      --server.port "$1" --server.headless true --browser.gatherUsageStats false >> "$RUN/replica-$1.log" 2>&1 &
    child=$!
    echo "$child" > "$RUN/replica-$1.pid"
    wait "$child" || true
    echo "$(date -Is) replica on port $1 exited; restarting" >> "$RUN/replica-$1.log"
    sleep 1 & wait $! || true  # a TERM interrupts the pause at once
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
replica_pids=$(for i in $(seq 1 "$REPLICAS"); do cat "$RUN/replica-$((BASE + i)).pid"; done | paste -sd,)
# nginx in the background and the script waiting for it: a signal to the script runs stop() at once (a foreground
# nginx would hold it back until nginx exits)
nginx -p "$RUN" -c "$RUN/nginx.conf" -g "daemon off;" &
nginx=$!
echo "replicas (pids $replica_pids, logs in $RUN) behind http://127.0.0.1:$PORT (nginx pid $nginx)"
wait "$nginx"  # nginx exiting by itself ends the script: the EXIT trap stops the replicas
