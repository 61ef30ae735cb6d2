"""A TCP relay that delays what it forwards, for a slow link where the kernel has no netem.

    python3 relay.py CONTROL LISTEN_PORT:TARGET_HOST:TARGET_PORT...

Listens on 127.0.0.1 (of the namespace it runs in) and forwards each connection to its
target. Every chunk is held for the delay in CONTROL (milliseconds, a decimal number; a
missing or empty file is 0), read again every 100 ms, in both directions and in order."""

import asyncio
import sys
import time


class Delay:
    def __init__(self, path):
        self.path = path
        self.ms = 0.0

    async def follow(self):
        while True:
            try:
                with open(self.path) as f:
                    self.ms = float(f.read().strip() or 0)
            except (OSError, ValueError):
                self.ms = 0.0
            await asyncio.sleep(0.1)


async def pipe(reader, writer, delay):
    queue = asyncio.Queue()

    async def read():
        while True:
            data = await reader.read(65536)
            await queue.put((time.monotonic(), data))
            if not data:
                return

    async def write():
        while True:
            at, data = await queue.get()
            wait = at + delay.ms / 1000 - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        writer.close()


def serve(target_host, target_port, delay):
    async def handle(reader, writer):
        try:
            up_r, up_w = await asyncio.open_connection(target_host, target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_w, delay), pipe(up_r, writer, delay),
                             return_exceptions=True)
    return handle


async def main(control, routes):
    delay = Delay(control)
    servers = []
    for route in routes:
        port, host, tport = route.split(":")
        servers.append(await asyncio.start_server(serve(host, int(tport), delay), "127.0.0.1",
                                                  int(port)))
    await delay.follow()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
