#!/usr/bin/env bash
# Runs nginx with TLS on loopback as the server of the pinned-host load run; nothing else is
# contacted.
#
#   nginx-tls.sh start        installs nginx-light if missing, makes a temporary folder with a
#                             ~14 KB JSON file (json), a private authority (ca.pem, its
#                             public-key pin in ca.pin) and a certificate it signed for
#                             127.0.0.1 and localhost, writes a config
#                             and starts nginx on 127.0.0.1 at a free port with TLS. Prints
#                             "PORT FOLDER" on stdout.
#   nginx-tls.sh stop FOLDER  stops that nginx (by the pid in its own pid file) and removes FOLDER.
#
# The server: one worker with 16 384 connections, HTTP/1.1 only, keep-alive (100 000 requests a
# connection), access log off, its pid file, logs and temp folders all inside FOLDER. nginx is
# started with `daemon off` in the background and found again by its own pid file (never by
# name), so a stop ends only this one.
set -euo pipefail

log() { echo "nginx-tls.sh: $*" >&2; }

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

free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$(( 20000 + RANDOM % 12000 ))
        if ! ss -Htln "sport = :$port" 2>/dev/null | grep -q .; then echo "$port"; return; fi
    done
    log "no free port found"; return 1
}

make_json() {
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

# A P-256 authority and a server certificate it signs, valid two days, for 127.0.0.1 and localhost.
make_certificates() {
    local dir=$1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=Transit load authority" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
        -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' > "$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
    # The authority's public-key pin: base64 of the SHA-256 of its SubjectPublicKeyInfo.
    openssl x509 -in "$dir/ca.pem" -pubkey -noout | openssl pkey -pubin -outform der \
        | openssl dgst -sha256 -binary | base64 > "$dir/ca.pin"
}

start() {
    install_nginx
    local dir port pid
    dir=$(mktemp -d "${TMPDIR:-/tmp}/transit-bench-nginx-tls.XXXXXX")
    mkdir -p "$dir/www" "$dir/tmp"
    chmod 755 "$dir" "$dir/www"
    make_json "$dir/www/json"
    make_certificates "$dir"
    for attempt in 1 2 3 4 5; do
        port=$(free_port)
        cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 40000;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    tcp_nodelay on;
    keepalive_timeout 65s;
    keepalive_requests 100000;
    default_type application/octet-stream;
    client_body_temp_path $dir/tmp/client;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port ssl;
        server_name localhost;
        ssl_certificate $dir/server.pem;
        ssl_certificate_key $dir/server.key;
        root $dir/www;
        location = /json { default_type application/json; }
    }
}
CONF
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
    local dir=${1:?usage: nginx-tls.sh stop FOLDER} pid
    case "$dir" in */transit-bench-nginx-tls.*) ;; *) log "not a benchmark folder: $dir"; return 1 ;; esac
    if [ -s "$dir/nginx.pid" ]; then
        pid=$(cat "$dir/nginx.pid")
        kill -QUIT "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) start ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: nginx-tls.sh start | nginx-tls.sh stop FOLDER" >&2; exit 2 ;;
esac
