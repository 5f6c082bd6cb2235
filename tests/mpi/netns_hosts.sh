#!/bin/sh
# Two "hosts" on one machine for the data-parallel tests: network namespaces A and B, each with
# its own address (10.231.0.1, 10.231.0.2) on the two ends of a veth pair, so ranks in them talk
# TCP over that link like two machines.
#   netns_hosts.sh up A B     create them (exit 1 with a reason on stderr where not allowed)
#   netns_hosts.sh down A B   remove them, ending whatever still runs inside
set -e
cmd="$1" a="$2" b="$3"
case "$cmd" in
  up)
    ip netns add "$a"
    ip netns add "$b"
    ip link add "${a}v" type veth peer name "${b}v"
    ip link set "${a}v" netns "$a"
    ip link set "${b}v" netns "$b"
    ip -n "$a" addr add 10.231.0.1/24 dev "${a}v"
    ip -n "$b" addr add 10.231.0.2/24 dev "${b}v"
    for ns in "$a" "$b"; do
      ip -n "$ns" link set lo up
      ip -n "$ns" link set "${ns}v" up
    done
    ;;
  down)
    for ns in "$a" "$b"; do
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    done
    ;;
  *) echo "usage: $0 up|down A B" >&2; exit 2 ;;
esac
