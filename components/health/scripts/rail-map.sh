#!/bin/bash
# Prints one line per rdma* interface of this pod: interface, IPv4 address, RDMA device, and the
# index of the RoCE v2 GID that holds the interface's own address ("none" where something is
# missing). DRANET's children keep their rail's name (rdma0, rdma1, ...) and get a GID index of
# their own, different from the parent's: this finds it instead of assuming one.
# SYSFS points at another sysfs root (tests use a fake tree).
set -u
sysfs=${SYSFS:-/sys}

ipv4_of() {  # first IPv4 address of interface $1
  ip -4 -o addr show dev "$1" 2>/dev/null | awk 'NR == 1 { split($4, a, "/"); print a[1] }'
}

gid_of_ipv4() {  # the IPv4-mapped GID text of address $1
  local IFS=.
  # shellcheck disable=SC2086
  set -- $1
  printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}

# Which (device, GID index) each RoCE v2 GID belongs to, keyed by netdev and GID value.
declare -A dev_of idx_of
for port in "$sysfs"/class/infiniband/*/ports/*; do
  [ -d "$port/gid_attrs/ndevs" ] || continue
  dev=$(basename "$(dirname "$(dirname "$port")")")
  for ndev_file in "$port"/gid_attrs/ndevs/*; do
    # Unused entries and netdevs in other namespaces fail to read; skip them.
    ndev=$(cat "$ndev_file" 2>/dev/null) || continue
    idx=${ndev_file##*/}
    type=$(cat "$port/gid_attrs/types/$idx" 2>/dev/null) || continue
    [ "$type" = "RoCE v2" ] || continue
    gid=$(cat "$port/gids/$idx" 2>/dev/null) || continue
    dev_of["$ndev|$gid"]=$dev
    idx_of["$ndev|$gid"]=$idx
    dev_of["$ndev"]=$dev
  done
done

for path in "$sysfs"/class/net/rdma*; do
  [ -e "$path" ] && echo "${path##*/}"
done | sort -V | while read -r iface; do
  addr=$(ipv4_of "$iface")
  if [ -n "$addr" ]; then
    key="$iface|$(gid_of_ipv4 "$addr")"
    echo "$iface $addr ${dev_of[$key]:-${dev_of[$iface]:-none}} ${idx_of[$key]:-none}"
  else
    echo "$iface none ${dev_of[$iface]:-none} none"
  fi
done
