#!/usr/bin/env python3
"""When each HTTP request crossed the loopback interface, by the kernel's packet timestamps.

An observer independent of both the client and the server under test: a raw packet socket on
`lo` (root or CAP_NET_RAW) with a kernel filter that keeps only IPv4 TCP segments of more than
200 bytes to PORT, so the streamed answers and their ACKs cost nothing here. For every segment
that starts a request (`POST ` or `GET `) it writes one JSON line to OUT:
{"request_id": <X-Request-ID or null>, "wire_ns": <CLOCK_REALTIME ns when the kernel received it>}.
The timestamps are taken by the kernel as the packet arrives, so this process being scheduled
late does not move them. Prints "ready" once capturing; stops on SIGTERM or SIGINT.

Usage: wire_arrivals.py PORT OUT
"""
import ctypes
import json
import signal
import socket
import struct
import sys

SO_ATTACH_FILTER = 26
SO_TIMESTAMPNS = 35
PACKET_OUTGOING = 4


def bpf(port):
    """Classic BPF: IPv4, TCP, not a fragment, IP length > 200, TCP destination port == port."""
    drop = 12
    prog = [
        (0x28, 0, 0, 12),  # ldh [12]           ethertype
        (0x15, 0, drop - 2, 0x0800),  # jeq IPv4
        (0x30, 0, 0, 23),  # ldb [23]           IP protocol
        (0x15, 0, drop - 4, 6),  # jeq TCP
        (0x28, 0, 0, 20),  # ldh [20]           flags + fragment offset
        (0x45, drop - 6, 0, 0x1FFF),  # jset fragment -> drop
        (0x28, 0, 0, 16),  # ldh [16]           IP total length
        (0x25, 0, drop - 8, 200),  # jgt 200
        (0xB1, 0, 0, 14),  # ldxb 4*([14]&0xf)  IP header length
        (0x48, 0, 0, 16),  # ldh [x+16]         TCP destination port
        (0x15, 0, drop - 11, port),  # jeq port
        (0x06, 0, 0, 4096),  # ret 4096 bytes (the request head)
        (0x06, 0, 0, 0),  # drop
    ]
    return b"".join(struct.pack("HBBI", *i) for i in prog)


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))
    prog = bpf(port)
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HL", len(prog) // 8, ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    s.bind(("lo", 0))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    s.settimeout(0.2)
    lines = []
    print("ready", flush=True)
    while not stop:
        try:
            data, anc, _flags, addr = s.recvmsg(4096, 64)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if addr[2] == PACKET_OUTGOING:
            continue  # loopback shows each packet leaving and arriving: keep the arrival
        ts = None
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                ts = sec * 1_000_000_000 + nsec
        if ts is None:
            continue
        ihl = (data[14] & 0x0F) * 4
        tcp = 14 + ihl
        payload = data[tcp + (data[tcp + 12] >> 4) * 4 :]
        if not (payload.startswith(b"POST ") or payload.startswith(b"GET ")):
            continue
        rid = None
        for line in payload.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"x-request-id":
                rid = v.strip().decode("ascii", "replace")
        lines.append(json.dumps({"request_id": rid, "wire_ns": ts}))
    with open(out, "w") as f:
        f.write("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main()
