#!/bin/sh
# OpenMPI launcher agent for the namespace hosts (mpirun --mca plm_rsh_agent THIS): called like ssh,
# "agent HOST COMMAND...", it runs COMMAND in the namespace that owns HOST's address, with its own
# host name, as ssh would on another machine. NANOGPT_NETNS_A / _B name the namespaces.
host="$1"
shift
case "$host" in
  10.231.0.1) ns="$NANOGPT_NETNS_A" ;;
  10.231.0.2) ns="$NANOGPT_NETNS_B" ;;
  *) echo "netns_agent: unknown host '$host' (expected 10.231.0.1 or 10.231.0.2)" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
