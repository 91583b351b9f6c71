import socket
import sys

host_port = int(sys.stdin.read().strip() or 0)
reached = []
for family, kind, address in [
    (socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 53)),
    (socket.AF_INET, socket.SOCK_STREAM, ("8.8.8.8", 443)),
    (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", host_port)),
    (socket.AF_INET6, socket.SOCK_STREAM, ("::1", host_port)),
]:
    try:
        with socket.socket(family, kind) as s:
            s.settimeout(0.3)
            s.connect(address)
            reached.append(address)
    except OSError:
        pass
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", ("8.8.8.8", 53))
        s.settimeout(0.3)
        s.recvfrom(10)
        reached.append("udp")
except OSError:
    pass
try:
    socket.getaddrinfo("example.com", 80)
    reached.append("dns")
except OSError:
    pass
print("REACHED" if reached else "isolated", reached)
raise SystemExit(1)
