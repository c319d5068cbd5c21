# tests/remote/hosts.sh: make "hosts" for the remote-stage tests and
# benchmarks/remote.sh: network namespaces joined by veth pairs, optionally
# rate-limited with tc tbf.  Sourced (POSIX sh):
#
#   . tests/remote/hosts.sh
#   hosts_up 2                  # client namespace + hosts 1 and 2; the EXIT
#                               # trap tears everything down (always)
#   hosts_rate 1 20mbit         # tc tbf on host 1's link, both directions
#   hosts_exec 1 0 nnpipe serve ...   # run on host 1, pinned to core 0 (taskset)
#   hosts_spawn 1 0 log nnpipe serve ...   # the same in the background: $HOSTS_PID
#   hosts_client taskset -c 1 gst-launch-1.0 ...   # run on the client host
#   hosts_addr 1                # host 1's address (10.N.1.2), the client's
#                               # end of that link is 10.N.1.1
#   hosts_on_exit 'rm -rf "$tmp"'   # more teardown (runs before the hosts go)
#
# Layout: a client namespace and N host namespaces; host i has its own veth
# pair to the client (/24 subnet 10.N.i.0, N chosen per run), so each host's
# link can carry its own tbf rate and parallel tests never share addresses.
# Nothing is added to the root namespace.  Processes started with
# hosts_exec / hosts_client in the background are killed (by pid, with the
# namespace's other processes) when the hosts go down.
#
# Needs root (CAP_NET_ADMIN), iproute2 (ip, tc) and util-linux (taskset):
# hosts_up fails with the reason when it cannot make the namespaces, it never
# skips.  The kernel here has no netem: add latency with
# tests/remote/delay-proxy.c (build/tests/remote/delay-proxy).

HOSTS_N=0
HOSTS_TAG=
HOSTS_NET=
HOSTS_EXIT=

hosts_fail () {
  echo "hosts.sh: $*" >&2
  exit 1
}

# Run a command in a namespace made by `ip netns add` (network namespace only:
# `ip netns exec` and `ip -n` also make a private mount namespace and remount
# /sys, which fails where / is not a mount point, e.g. in a chroot).
hosts_in () {
  _ns=$1
  shift
  nsenter --net="/run/netns/$_ns" "$@"
}

# hosts_up N: make the client namespace and N hosts (1..N)
hosts_up () {
  n=${1:?hosts_up N}
  command -v ip >/dev/null 2>&1 || hosts_fail "no 'ip' command: install the Debian package iproute2"
  command -v tc >/dev/null 2>&1 || hosts_fail "no 'tc' command: install the Debian package iproute2"
  command -v taskset >/dev/null 2>&1 || hosts_fail "no 'taskset' command: install the Debian package util-linux"
  command -v nsenter >/dev/null 2>&1 || hosts_fail "no 'nsenter' command: install the Debian package util-linux"
  [ "$(id -u)" = 0 ] || hosts_fail "network namespaces need root (CAP_NET_ADMIN); run the remote tests as root"
  HOSTS_TAG=nnp$$
  # a /16 per run: 10.(100..227).i.0/24, from the pid (namespaces are private:
  # the subnet only has to differ from the machine's own networks)
  HOSTS_NET=$((100 + $$ % 128))
  trap 'hosts_down' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  err=$(ip netns add "${HOSTS_TAG}c" 2>&1) ||
    hosts_fail "cannot create a network namespace (ip netns add): $err"
  HOSTS_N=$n
  hosts_in "${HOSTS_TAG}c" ip link set lo up || hosts_fail "cannot bring up lo in the client namespace"
  i=1
  while [ "$i" -le "$n" ]; do
    ns=${HOSTS_TAG}h$i
    err=$(ip netns add "$ns" 2>&1) || hosts_fail "cannot create namespace $ns: $err"
    err=$(ip link add "${HOSTS_TAG}c$i" netns "${HOSTS_TAG}c" type veth \
            peer name "${HOSTS_TAG}h$i" netns "$ns" 2>&1) ||
      hosts_fail "cannot create a veth pair for host $i: $err"
    hosts_in "${HOSTS_TAG}c" ip addr add "10.$HOSTS_NET.$i.1/24" dev "${HOSTS_TAG}c$i" &&
      hosts_in "$ns" ip addr add "10.$HOSTS_NET.$i.2/24" dev "${HOSTS_TAG}h$i" &&
      hosts_in "${HOSTS_TAG}c" ip link set "${HOSTS_TAG}c$i" up &&
      hosts_in "$ns" ip link set "${HOSTS_TAG}h$i" up &&
      hosts_in "$ns" ip link set lo up || hosts_fail "cannot configure host $i's link"
    i=$((i + 1))
  done
  # the links are up when a host answers on its address (no ping here: a TCP
  # connect to a closed port answers with RST at once)
  i=1
  while [ "$i" -le "$n" ]; do
    t=0
    until hosts_in "${HOSTS_TAG}h$i" ip addr show "${HOSTS_TAG}h$i" | grep -q 'state UP\|LOWER_UP'; do
      t=$((t + 1)); [ $t -lt 50 ] || hosts_fail "host $i's link does not come up"
      sleep 0.1
    done
    i=$((i + 1))
  done
}

hosts_addr () { echo "10.$HOSTS_NET.${1:?hosts_addr I}.2"; }
hosts_client_addr () { echo "10.$HOSTS_NET.${1:?hosts_client_addr I}.1"; }

# hosts_rate I RATE: tc tbf RATE (tc units: 20mbit, 2mbps...) on host I's
# link, both directions; "off" removes it
hosts_rate () {
  i=${1:?hosts_rate I RATE}; rate=${2:?hosts_rate I RATE}
  for end in "${HOSTS_TAG}c ${HOSTS_TAG}c$i" "${HOSTS_TAG}h$i ${HOSTS_TAG}h$i"; do
    set -- $end
    hosts_in "$1" tc qdisc del dev "$2" root 2>/dev/null
    [ "$rate" = off ] && continue
    # burst: 10 ms of the rate (at least 16 KiB) so the rate holds at the
    # kernel's timer granularity; a queue of 200 ms before drops
    err=$(hosts_in "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 64kb latency 200ms 2>&1) ||
      hosts_fail "tc tbf $rate on host $i's link: $err"
  done
}

# hosts_exec I CORE CMD...: CMD on host I pinned to CORE ("-" = not pinned)
hosts_exec () {
  i=${1:?hosts_exec I CORE CMD}; core=${2:?hosts_exec I CORE CMD}; shift 2
  if [ "$core" = - ]; then
    hosts_in "${HOSTS_TAG}h$i" "$@"
  else
    hosts_in "${HOSTS_TAG}h$i" taskset -c "$core" "$@"
  fi
}

# hosts_spawn I CORE LOG CMD...: CMD on host I pinned to CORE ("-" = not
# pinned) in the background, stdout and stderr to LOG; HOSTS_PID is its pid
# (the command's own: `kill -9 $HOSTS_PID` kills it, not a shell around it)
hosts_spawn () {
  i=${1:?hosts_spawn I CORE LOG CMD}; core=${2:?}; log=${3:?}; shift 3
  if [ "$core" = - ]; then
    (exec nsenter --net="/run/netns/${HOSTS_TAG}h$i" "$@" > "$log" 2>&1) &
  else
    (exec nsenter --net="/run/netns/${HOSTS_TAG}h$i" taskset -c "$core" "$@" > "$log" 2>&1) &
  fi
  HOSTS_PID=$!
}

# hosts_client CMD...: CMD on the client host
hosts_client () { hosts_in "${HOSTS_TAG}c" "$@"; }

hosts_on_exit () { HOSTS_EXIT="$HOSTS_EXIT
$1"; }

# hosts_down: kill what runs in the namespaces and delete them (the veths go
# with them); called by the EXIT trap, safe to call twice
hosts_down () {
  st=$?
  [ -z "$HOSTS_EXIT" ] || eval "$HOSTS_EXIT"
  HOSTS_EXIT=
  [ -n "$HOSTS_TAG" ] || return $st
  for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^${HOSTS_TAG}[ch][0-9]*\$"); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  HOSTS_TAG=
  return $st
}
