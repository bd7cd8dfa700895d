# shellcheck shell=bash
# What the two rail acceptance gates share (rail-bandwidth.sh on the DRANET path, vf-rail-bandwidth.sh
# on the SR-IOV path, which source this file): reaching a worker over ssh, one ib_write_bw pair on one
# rail held to the threshold, and the verdict over all rails. Each gate finds its rails its own way.
# The caller sets min (the threshold in Gb/s) and server (the server worker); rail_bandwidth counts
# rails and sets failed=1 on a failing rail.
port=18515
rails=0
failed=0

on() {
  local host=$1
  shift
  ssh -o ConnectTimeout=10 "$host" "$@"  # host keys checked: the launcher's ssh_config (acceptance_jobs.py)
}

# rail_bandwidth LABEL CLIENT SERVER_DEV SERVER_GID CLIENT_DEV CLIENT_GID SERVER_IP TCLASS: ib_write_bw
# from CLIENT's device to SERVER's on one rail (a fresh port each), printed as "LABEL -> SERVER_IP"
# with the figure, FAIL when it gives no result or is below $min.
rail_bandwidth() {
  local label=$1 client=$2 server_dev=$3 server_gid=$4 client_dev=$5 client_gid=$6 server_ip=$7 tclass=$8
  local result
  on "$server" ib_write_bw -d "$server_dev" -x "$server_gid" -F --report_gbits -D 5 --tclass="$tclass" \
    -p "$port" >/dev/null 2>&1 &
  sleep 2
  result=$(on "$client" ib_write_bw -d "$client_dev" -x "$client_gid" -F --report_gbits -D 5 --tclass="$tclass" \
    -p "$port" "$server_ip" 2>&1 | awk '/^ 65536/ {print $4}')
  wait || true
  if [ -z "$result" ]; then
    echo "$label -> $server_ip: FAIL: no result"
    failed=1
  elif awk -v r="$result" -v m="$min" 'BEGIN { exit !(r + 0 < m + 0) }'; then
    echo "$label -> $server_ip $result Gb/s: FAIL: below the threshold $min Gb/s"
    failed=1
  else
    echo "$label -> $server_ip $result Gb/s"
  fi
  port=$((port + 1))
}

# rails_verdict WHAT: the gate's last line and exit status; WHAT names what the server holds ("rail", "VF").
rails_verdict() {
  if [ "$rails" -eq 0 ]; then
    echo "ib_write_bw per rail: FAIL: $server holds no $1"
    exit 1
  fi
  if [ "$failed" -ne 0 ]; then
    echo "ib_write_bw per rail: FAIL ($rails rails, threshold $min Gb/s)"
    exit 1
  fi
  echo "ib_write_bw per rail: PASS ($rails rails, threshold $min Gb/s)"
}
