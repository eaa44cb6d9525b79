#!/usr/bin/env bash
# Runs nginx on loopback as the server of the transport benchmark; nothing else is contacted.
#
#   nginx.sh start        installs nginx-light if missing, makes a temporary folder with a ~14 KB
#                         JSON file (json) and a 1 GiB file (big), writes a config and starts
#                         nginx on 127.0.0.1 at a free port. Prints "PORT FOLDER" on stdout.
#   nginx.sh stop FOLDER  stops that nginx (by the pid in its own pid file) and removes FOLDER.
#
# The server: one worker, keep-alive (100 000 requests a connection), sendfile on, access log off,
# its pid file, logs and temp folders all inside FOLDER. nginx is started with `daemon off` in the
# background and found again by its own pid file (never by name), so a stop ends only this one.
set -euo pipefail

log() { echo "nginx.sh: $*" >&2; }

install_nginx() {
    command -v nginx >/dev/null 2>&1 && return
    [ -x /usr/sbin/nginx ] && return
    log "installing nginx-light"
    if ! apt-get install -y -qq nginx-light >&2; then
        apt-get update -qq >&2
        apt-get install -y -qq nginx-light >&2
    fi
}

nginx_bin() { command -v nginx 2>/dev/null || echo /usr/sbin/nginx; }

# A TCP port nobody listens on, in the range Linux does not hand out as ephemeral ports.
free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$(( 20000 + RANDOM % 12000 ))
        if ! ss -Htln "sport = :$port" 2>/dev/null | grep -q .; then echo "$port"; return; fi
    done
    log "no free port found"; return 1
}

make_json() {
    # 100 posts of about 140 bytes each: a ~14 KB JSON array like a REST list endpoint returns.
    local file=$1 i sep=""
    {
        printf '['
        for i in $(seq 1 100); do
            printf '%s{"id":%d,"userId":%d,"title":"Post number %d about streaming transports","body":"The quick brown fox jumps over the lazy dog, post %05d."}' \
                "$sep" "$i" $(( i % 10 + 1 )) "$i" "$i"
            sep=","
        done
        printf ']\n'
    } > "$file"
}

start() {
    install_nginx
    local dir port pid
    dir=$(mktemp -d "${TMPDIR:-/tmp}/transit-bench-nginx.XXXXXX")
    mkdir -p "$dir/www" "$dir/tmp"
    chmod 755 "$dir" "$dir/www"     # nginx's worker runs as an unprivileged user
    make_json "$dir/www/json"
    # 1 GiB without writing it: an allocated (zero-filled) file; dd as a fallback.
    fallocate -l 1G "$dir/www/big" 2>/dev/null || dd if=/dev/zero of="$dir/www/big" bs=1M count=1024 status=none
    for attempt in 1 2 3 4 5; do
        port=$(free_port)
        cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65s;
    keepalive_requests 100000;
    default_type application/octet-stream;
    types { application/json json; }
    client_body_temp_path $dir/tmp/client;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        root $dir/www;
        location = /json { default_type application/json; }
    }
}
CONF
        # -e: the log used before the config is read, kept out of /var/log. nginx gets no
        # descriptor of the caller's (a pipe reading this script's output would never close).
        (
            for fd in /proc/self/fd/*; do
                fd=${fd##*/}
                if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
            done
            exec "$(nginx_bin)" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
        ) </dev/null >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do
            if ss -Htln "sport = :$port" 2>/dev/null | grep -q . && [ -s "$dir/nginx.pid" ]; then
                echo "$port $dir"
                return
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        log "nginx did not start on port $port (attempt $attempt):"; tail -3 "$dir/error.log" >&2 || true
    done
    rm -rf "$dir"
    return 1
}

stop() {
    local dir=${1:?usage: nginx.sh stop FOLDER} pid
    case "$dir" in */transit-bench-nginx.*) ;; *) log "not a benchmark folder: $dir"; return 1 ;; esac
    if [ -s "$dir/nginx.pid" ]; then
        pid=$(cat "$dir/nginx.pid")
        # SIGQUIT: graceful stop of the master and its worker.
        kill -QUIT "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) start ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: nginx.sh start | nginx.sh stop FOLDER" >&2; exit 2 ;;
esac
