"""Soak `mia serve-model` (issue 42.1): N clients send chat requests back to back for D seconds
against a real server process; every request must be answered (200) or cleanly refused (503 with
Retry-After), the server's memory must stay flat, and a normal request must be answered after.

    python bench/app/soak_model_server.py --clients 50 --duration 600 --model llamacpp:smollm2

Writes bench/app/soak.md and soak.json: requests answered, refused and failed, p50/p95 latency of
the answered ones, the server's RSS at start and end (psutil), and the final request's status.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
from tqdm import tqdm

HERE = Path(__file__).resolve().parent
REQUEST = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def client(url: str, until: float, tally: dict, latencies: list[float], bar: tqdm) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                reply = await http.post(url, json=REQUEST)
                kind = {200: "answered", 503: "refused"}.get(reply.status_code, f"status {reply.status_code}")
                if reply.status_code == 200:
                    latencies.append(time.monotonic() - started)
                elif reply.status_code == 503:
                    await asyncio.sleep(float(reply.headers.get("retry-after", "1")))
            except httpx.HTTPError as err:
                kind = type(err).__name__
            tally[kind] = tally.get(kind, 0) + 1
            bar.update(1)


async def soak(url: str, clients: int, duration: float) -> tuple[dict, list[float]]:
    tally: dict[str, int] = {}
    latencies: list[float] = []
    until = time.monotonic() + duration
    with tqdm(desc="requests", unit="req") as bar:
        await asyncio.gather(*[client(url, until, tally, latencies, bar) for _ in range(clients)])
    return tally, latencies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, default=600, help="seconds")
    ap.add_argument("--model", default="llamacpp:smollm2")
    ap.add_argument("--out", type=Path, default=HERE / "soak")
    args = ap.parse_args()
    port = free_port()
    mia = str(Path(sys.executable).with_name("mia"))
    server = subprocess.Popen(
        [mia, "serve-model", "--model", args.model, "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None and "Serving" in server.stdout.readline(), "the server did not start"
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        process = psutil.Process(server.pid)
        rss_start = process.memory_info().rss
        tally, latencies = asyncio.run(soak(url, args.clients, args.duration))
        rss_end = process.memory_info().rss
        final = httpx.post(url, json=REQUEST, timeout=300).status_code
    finally:
        server.terminate()
        server.wait(30)
    quantiles = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [float("nan")] * 19
    figures = {
        "model": args.model,
        "clients": args.clients,
        "duration_s": args.duration,
        "cpus": os.cpu_count(),
        "requests": sum(tally.values()),
        "outcomes": tally,
        "p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "p95_s": round(quantiles[18], 2),
        "rss_start_mb": round(rss_start / 2**20, 1),
        "rss_end_mb": round(rss_end / 2**20, 1),
        "final_request_status": final,
    }
    args.out.with_suffix(".json").write_text(json.dumps(figures, indent=2) + "\n")
    lines = [
        "# `mia serve-model` soak",
        "",
        f"Command: `python bench/app/soak_model_server.py --clients {args.clients} --duration {args.duration:g} "
        f"--model {args.model}` ({os.cpu_count()} CPUs; each client sends its next request when the last "
        "is answered, after Retry-After when refused).",
        "",
        "| requests | answered | refused (503) | other | p50 / p95 answered (s) | server RSS start -> end (MB) | a request after |",
        "|---|---|---|---|---|---|---|",
        f"| {figures['requests']} | {tally.get('answered', 0)} | {tally.get('refused', 0)} | "
        f"{sum(v for k, v in tally.items() if k not in ('answered', 'refused'))} | {figures['p50_s']} / {figures['p95_s']} | "
        f"{figures['rss_start_mb']} -> {figures['rss_end_mb']} | {final} |",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
