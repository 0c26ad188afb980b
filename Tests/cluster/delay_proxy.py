#!/usr/bin/python3
"""A TCP proxy that delays every byte by a fixed time in each direction, and can cap each
direction's rate: a slow link for the fault tests, since tc netem is not available where they
run.

    delay_proxy.py --delay 0.2 [--rate BYTES_PER_S] LISTEN_HOST:PORT=TARGET_HOST:PORT [...]

Each mapping accepts connections on LISTEN and opens one to TARGET per accepted connection.
Bytes read at time t are written at t + delay, in order, so a round trip through the proxy
takes at least 2 x delay, whatever the traffic. With --rate, each direction of each connection
carries at most that many bytes a second, and the proxy holds at most 256 KiB of it, so the
sender feels the link's pace as TCP back-pressure. Runs until killed. Standard library only.
"""

import argparse
import asyncio
import sys


async def pump(reader, writer, delay, rate=None):
    """Copies reader to writer, each chunk `delay` seconds after it was read (and, with `rate`,
    no faster than `rate` bytes a second)."""
    loop = asyncio.get_running_loop()
    read_size = 65536 if rate is None else 16384
    queue = asyncio.Queue() if rate is None else asyncio.Queue(maxsize=16)

    async def read():
        try:
            while True:
                chunk = await reader.read(read_size)
                await queue.put((loop.time() + delay, chunk))
                if not chunk:
                    return
        except (ConnectionError, OSError):
            await queue.put((loop.time() + delay, b""))

    async def write():
        try:
            while True:
                due, chunk = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    writer.close()
                    return
                writer.write(chunk)
                await writer.drain()
                if rate:
                    await asyncio.sleep(len(chunk) / rate)
        except (ConnectionError, OSError):
            writer.close()

    await asyncio.gather(read(), write())


async def start(listen, target, delay, rate=None):
    """Starts listening on `listen`; returns the server."""
    lhost, lport = listen.rsplit(":", 1)
    thost, tport = target.rsplit(":", 1)

    async def accepted(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(thost, int(tport))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, delay, rate), pump(server_reader, client_writer, delay, rate),
                             return_exceptions=True)

    return await asyncio.start_server(accepted, lhost, int(lport), reuse_address=True)


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, required=True, help="one-way delay in seconds")
    parser.add_argument("--rate", type=float, help="bytes a second, each way, per connection (default: no cap)")
    parser.add_argument("mappings", nargs="+", metavar="LISTEN=TARGET")
    args = parser.parse_args()
    servers = []
    for mapping in args.mappings:
        listen, target = mapping.split("=")
        servers.append(await start(listen, target, args.delay, args.rate))
    print("ready", flush=True)  # every mapping is listening
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
