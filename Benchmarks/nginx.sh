# Sourced by the benchmarks (not run): nginx from Debian on 127.0.0.1, as both run it —
# 2 workers, sendfile, long keep-alive, $work/www as the root and WebDAV PUT under /upload/.
#
#   start_nginx WORK   sets nginx_pid and nginx_url; tries a few random ports; exits on failure
#   stop_pid PID       SIGTERM, a bounded wait (5 s), then SIGKILL: never leaves it behind
#
# WORK must hold www/upload, logs and temp (world-writable upload and temp when run as root).

stop_pid() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    printf 'pid %s did not stop within 5 s of SIGTERM; SIGKILL\n' "$pid" >&2
    kill -9 "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

start_nginx() {
  local work=$1 nginx user_line="" try port=""
  nginx=$(command -v nginx || echo /usr/sbin/nginx)
  [ "$(id -u)" -eq 0 ] && user_line="user root root;"
  echo ok >"$work/www/ping"
  nginx_pid=""
  for _ in 1 2 3 4 5; do
    try=$((20000 + RANDOM % 30000))
    cat >"$work/nginx.conf" <<CONF
$user_line
worker_processes 2;
daemon off;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    client_max_body_size 0;
    client_body_temp_path $work/temp/body;
    proxy_temp_path $work/temp/proxy;
    fastcgi_temp_path $work/temp/fastcgi;
    uwsgi_temp_path $work/temp/uwsgi;
    scgi_temp_path $work/temp/scgi;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$try;
        root $work/www;
        location /upload/ {
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_body_buffer_size 1m;
        }
    }
}
CONF
    "$nginx" -p "$work/" -c "$work/nginx.conf" -e "$work/logs/error.log" >"$work/logs/nginx-stderr.log" 2>&1 &
    nginx_pid=$!
    for _ in $(seq 100); do
      if curl -s -o /dev/null "http://127.0.0.1:$try/ping"; then port=$try; break; fi
      kill -0 "$nginx_pid" 2>/dev/null || break
      sleep 0.05
    done
    [ -n "$port" ] && break
    stop_pid "$nginx_pid"
    nginx_pid=""
  done
  if [ -z "$port" ]; then
    printf 'nginx did not start:\n' >&2
    cat "$work/logs/"*.log >&2
    exit 1
  fi
  nginx_url="http://127.0.0.1:$port"
  printf 'nginx on %s (pid %s)\n' "$nginx_url" "$nginx_pid" >&2
}
