#!/bin/sh
# tests/remote/test-hosts.sh: the test hosts of tests/remote/hosts.sh work.
#
# usage: test-hosts.sh SOURCE_DIR
#
# Two hosts: each answers on its address from the client namespace; a
# command run with hosts_exec is pinned to the core asked for; a tbf rate
# of 8 mbit on host 1's link holds (1 MB/s measured each way, +-30 %) while
# host 2's link stays fast (> 20 MB/s); after the script ends every
# namespace it made is gone, also when it fails half-way; as a user without
# CAP_NET_ADMIN hosts_up fails with the reason (it does not skip).
set -u
src=$(cd "${1:?usage: test-hosts.sh SOURCE_DIR}" && pwd)
py=/usr/bin/python3
fail=0
ok () { echo "ok  : $*"; }
bad () { echo "FAIL: $*"; fail=1; }

# a byte counter server and a timed sender (MB/s), one way each
cat > "${TMPDIR:-/tmp}/nnp-hosts-$$.py" <<'PYEOF'
import socket, sys, time
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == 'sink':
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(); print('ready', flush=True)
    while True:
        c, _ = s.accept()
        n = 0
        while True:
            b = c.recv(1 << 16)
            if not b: break
            n += len(b)
        c.sendall(b'%d' % n); c.close()
else:
    nbytes = int(sys.argv[4])
    for attempt in range(50):
        try:
            s = socket.create_connection((addr, port)); break
        except OSError:
            time.sleep(0.1)
    t = time.monotonic(); s.sendall(b'x' * nbytes); s.shutdown(socket.SHUT_WR)
    got = int(s.recv(64)); dt = time.monotonic() - t
    print('%.3f %d' % (nbytes / dt / 1e6, got))
PYEOF
probe="${TMPDIR:-/tmp}/nnp-hosts-$$.py"

out=$(
  . "$src/tests/remote/hosts.sh"
  hosts_up 2
  hosts_on_exit "rm -f '$probe'"
  echo "tag $HOSTS_TAG"
  hosts_rate 1 8mbit
  cpus=$(hosts_exec 2 1 sh -c 'grep Cpus_allowed_list /proc/self/status' | awk '{ print $2 }')
  echo "pinned $cpus"
  for i in 1 2; do
    hosts_exec "$i" - "$py" "$probe" sink "$(hosts_addr "$i")" 7100 >/dev/null &
    mb=$([ "$i" = 1 ] && echo 1500000 || echo 50000000)
    echo "up$i $(hosts_client "$py" "$probe" send "$(hosts_addr "$i")" 7100 "$mb")"
    # the other way: the client listens, the host sends
    hosts_client "$py" "$probe" sink "$(hosts_client_addr "$i")" 7101 >/dev/null &
    echo "down$i $(hosts_exec "$i" - "$py" "$probe" send "$(hosts_client_addr "$i")" 7101 "$mb")"
  done
)
st=$?
echo "$out" | sed 's/^/  /'
tag=$(echo "$out" | awk '$1 == "tag" { print $2 }')
[ $st = 0 ] || bad "the hosts script failed (status $st)"
[ -n "$tag" ] || bad "no namespaces made"
[ "$(echo "$out" | awk '$1 == "pinned" { print $2 }')" = 1 ] && ok "hosts_exec 2 1: pinned to core 1" ||
  bad "hosts_exec 2 1 is not pinned to core 1"
for dir in up down; do
  r1=$(echo "$out" | awk -v k="${dir}1" '$1 == k { print $2 }')
  n1=$(echo "$out" | awk -v k="${dir}1" '$1 == k { print $3 }')
  r2=$(echo "$out" | awk -v k="${dir}2" '$1 == k { print $2 }')
  if [ -n "$r1" ] && [ "$n1" = 1500000 ] && awk -v r="$r1" 'BEGIN { exit !(r >= 0.7 && r <= 1.3) }'; then
    ok "host 1 $dir at 8 mbit: $r1 MB/s, every byte"
  else
    bad "host 1 $dir at 8 mbit: '$r1' MB/s ($n1 bytes), want 1 MB/s +-30 %"
  fi
  if [ -n "$r2" ] && awk -v r="$r2" 'BEGIN { exit !(r > 20) }'; then
    ok "host 2 $dir, no limit: $r2 MB/s"
  else
    bad "host 2 $dir, no limit: '$r2' MB/s, want > 20"
  fi
done
left=$(ip netns list | awk '{ print $1 }' | grep "^${tag:-none}[ch]")
[ -z "$left" ] && ok "namespaces gone after the script" || bad "namespaces left behind: $left"

# a failure half-way still tears down
tag=$( . "$src/tests/remote/hosts.sh"; hosts_up 1; echo "$HOSTS_TAG"; false; exit 3 )
left=$(ip netns list | awk '{ print $1 }' | grep "^${tag:-none}[ch]")
[ -n "$tag" ] && [ -z "$left" ] && ok "namespaces gone after a failing script" ||
  bad "after a failing script: tag '$tag', left '$left'"

# no CAP_NET_ADMIN: a clear failure
# (a copy nobody can read: the checkout may be under root's private home)
nobody_dir=$(mktemp -d)
cp "$src/tests/remote/hosts.sh" "$nobody_dir/"
chmod 755 "$nobody_dir"
chmod 644 "$nobody_dir/hosts.sh"
msg=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups sh -c ". '$nobody_dir/hosts.sh'; hosts_up 1; echo made" 2>&1)
st=$?
rm -rf "$nobody_dir"
case $msg in
  *"need root"*) [ $st != 0 ] && ok "as nobody: fails ($st): $msg" || bad "as nobody: status 0: $msg" ;;
  *) bad "as nobody: status $st, no reason given: $msg" ;;
esac
exit $fail
