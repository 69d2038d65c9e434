#!/usr/bin/env python3
"""Floods a running `ki serve` and measures /healthz while it lasts (issue 36, finding 1).

Scenarios (each for --seconds, sockets opened as fast as the flooders can, and held):
  heads      stalled request heads: `POST ... HTTP/1.1\r\nhost: x\r\n` and nothing more
  bodies     stalled request bodies: a whole head declaring `Content-Length: 100`, then `{`
  halfopen   --halfopen sockets (default 5,000) that connect and send nothing
The flood comes from --peers loopback addresses (127.0.0.2 ...); /healthz is asked from
127.0.0.1 every 20 ms on a connection of its own, 2 s allowed. The stalled heads and bodies
keep coming for the whole time; the flooder holds at most --hold of them (3,000) and closes
its oldest beyond that, so that its own descriptors do not run out before the server's. Prints one line per scenario:
probes, unanswered, p50, p99, max (ms), sockets the flood opened.

    python3 bench/security/flood.py --addr 127.0.0.1:8099 --seconds 8 --peers 1
"""

import argparse
import asyncio
import socket
import time

HOLD = 3000
STALLED_HEAD = b"POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\n"
STALLED_BODY = b"POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"


async def open_from(peer, host, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.bind((peer, 0))
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, port))
    return sock


async def flooder(peer, host, port, payload, stop, held, limit):
    loop = asyncio.get_running_loop()
    opened = 0
    while not stop.is_set() and opened < limit:
        try:
            sock = await asyncio.wait_for(open_from(peer, host, port), 1.0)
            if payload:
                await loop.sock_sendall(sock, payload)
            held.append(sock)
            opened += 1
            # This process's own descriptors are limited too: past --hold sockets the
            # oldest are closed (the flood goes on; the half-open ones are never closed).
            if len(held) > HOLD and limit > 10**8:
                held.pop(0).close()
        except (OSError, asyncio.TimeoutError):
            await asyncio.sleep(0.001)
        if opened % 50 == 0:
            await asyncio.sleep(0)
    return opened


async def healthz(host, port):
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, local_addr=("127.0.0.1", 0)), 2.0)
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 2.0)
        writer.close()
        if answer.startswith(b"HTTP/1.1 200"):
            return (time.perf_counter() - started) * 1000
    except (OSError, asyncio.TimeoutError):
        pass
    return None


async def scenario(name, args, host, port):
    payload = {"heads": STALLED_HEAD, "bodies": STALLED_BODY, "halfopen": b""}[name]
    limit = args.halfopen if name == "halfopen" else 10**9
    stop = asyncio.Event()
    held = []
    peers = [f"127.0.0.{2 + i}" for i in range(args.peers)]
    per_peer = max(1, limit // len(peers))
    floods = [asyncio.create_task(flooder(p, host, port, payload, stop, held, per_peer)) for p in peers]
    await asyncio.sleep(1.0)
    times = []
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        times.append(await healthz(host, port))
        await asyncio.sleep(0.02)
    stop.set()
    opened = sum(await asyncio.gather(*floods))
    for sock in held:
        sock.close()
    answered = sorted(t for t in times if t is not None)
    unanswered = len(times) - len(answered)

    def pct(q):
        return answered[min(len(answered) - 1, int(q * len(answered)))] if answered else float("nan")

    print(
        f"{name:9} peers={args.peers} probes={len(times)} unanswered={unanswered} "
        f"p50={pct(0.5):.2f}ms p99={pct(0.99):.2f}ms max={answered[-1] if answered else float('nan'):.2f}ms "
        f"flood_sockets={opened}",
        flush=True,
    )
    await asyncio.sleep(2.0)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:8099")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--peers", type=int, default=1)
    parser.add_argument("--halfopen", type=int, default=5000)
    parser.add_argument("--scenarios", default="heads,bodies,halfopen")
    parser.add_argument("--hold", type=int, default=3000, help="flood sockets held open at most (heads, bodies)")
    args = parser.parse_args()
    global HOLD
    HOLD = args.hold
    host, port = args.addr.rsplit(":", 1)
    for name in args.scenarios.split(","):
        await scenario(name, args, host, int(port))


asyncio.run(main())
