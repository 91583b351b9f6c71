# BUG: precomputes M^(2^k) only for k < 30 (assumes seasons below ~10^9), so higher bits of n are silently ignored.
import sys

MOD = 10**9 + 7


def mat_mul(p, q):
    return [[(p[i][0] * q[0][j] + p[i][1] * q[1][j] + p[i][2] * q[2][j]) % MOD for j in range(3)]
            for i in range(3)]


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    powers = [[[a, b, c], [1, 0, 0], [0, 0, 1]]]
    for _ in range(29):
        powers.append(mat_mul(powers[-1], powers[-1]))
    out = []
    for i in range(t):
        n = int(data[6 + i])
        v0, v1 = x1 % MOD, x0 % MOD  # state (x_{k+1}, x_k, 1) at k = 0
        for k in range(30):
            if n >> k & 1:
                m = powers[k]
                v0, v1 = ((m[0][0] * v0 + m[0][1] * v1 + m[0][2]) % MOD,
                          (m[1][0] * v0 + m[1][1] * v1 + m[1][2]) % MOD)
        out.append(v1)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
