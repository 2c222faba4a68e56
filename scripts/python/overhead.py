"""What lbsim costs from Python, next to the command line: import time, a tiny run per call
in-process against the binary plus pandas.read_csv of its CSV (medians of 30), and a large run
both ways. Usage: python scripts/python/overhead.py [path/to/lbsim]  (default target/release/lbsim)."""

import io
import statistics
import subprocess
import sys
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/lbsim"


def wall(argv):
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def median_of(n, f):
    return statistics.median(f() for _ in range(n))


def main():
    py = sys.executable
    print("import lbsim  %.3f s" % median_of(5, lambda: wall([py, "-c", "import lbsim"])))
    print("import pandas %.3f s" % median_of(5, lambda: wall([py, "-c", "import pandas"])))
    import pandas as pd

    import lbsim

    tiny = ["homo", "--loads", "0.5", "--seeds", "1", "--requests", "1000", "--warmup", "0",
            "--threads", "1", "--format", "csv"]

    def in_process():
        start = time.perf_counter()
        lbsim.homo(loads=[0.5], seeds=1, requests=1000, warmup=0, threads=1)
        return time.perf_counter() - start

    def via_cli():
        start = time.perf_counter()
        out = subprocess.run([BIN, *tiny], check=True, capture_output=True, text=True).stdout
        pd.read_csv(io.StringIO(out))
        return time.perf_counter() - start

    print("tiny run in-process %.1f ms" % (median_of(30, in_process) * 1e3))
    print("tiny run via the CLI + read_csv %.1f ms" % (median_of(30, via_cli) * 1e3))
    start = time.perf_counter()
    lbsim.homo(loads=[0.9], seeds=2, requests=1_000_000, warmup=100_000)
    print("large run in-process %.2f s" % (time.perf_counter() - start))
    large = ["homo", "--loads", "0.9", "--seeds", "2", "--requests", "1000000", "--warmup",
             "100000", "--format", "csv"]
    print("large run via the CLI %.2f s" % wall([BIN, *large]))


if __name__ == "__main__":
    main()
