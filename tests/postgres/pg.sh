#!/bin/sh
# A throwaway PostgreSQL 15 cluster for the registry tests (tox -e postgres).
#   pg.sh install           install PostgreSQL 15 from Debian's packages, if missing
#   pg.sh start DIR PORT    initdb in DIR and serve on 127.0.0.1:PORT (trust auth, user postgres)
#   pg.sh stop DIR          stop that cluster and remove DIR
# initdb and pg_ctl refuse to run as root: as root they run as the postgres user.
set -eu
BIN=/usr/lib/postgresql/15/bin

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
install)
    if [ -x "$BIN/initdb" ]; then exit 0; fi
    # Only our own clusters: no default one started by the package.
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/pdx-tests.conf
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
    ;;
start)
    dir=$2 port=$3
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_owner "$BIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
    # fsync off: a cluster that lives for one test session need not survive a crash.
    as_owner "$BIN/pg_ctl" -D "$dir/data" -w -l "$dir/server.log" \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    ;;
stop)
    dir=$2
    if [ -d "$dir/data" ]; then as_owner "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true; fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: pg.sh install | start DIR PORT | stop DIR" >&2
    exit 2
    ;;
esac
