# BUG: starts from season 1 and applies M^(n - 1); for n = 0 the loop never runs and x_1 is printed instead of x_0.
import sys

MOD = 10**9 + 7


def mat_mul(p, q):
    return [[(p[i][0] * q[0][j] + p[i][1] * q[1][j] + p[i][2] * q[2][j]) % MOD for j in range(3)]
            for i in range(3)]


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    step = [[a, b, c], [1, 0, 0], [0, 0, 1]]
    out = []
    for i in range(t):
        e = int(data[6 + i]) - 1
        result = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
        m = step
        while e > 0:
            if e & 1:
                result = mat_mul(result, m)
            m = mat_mul(m, m)
            e >>= 1
        out.append((result[0][0] * x1 + result[0][1] * x0 + result[0][2]) % MOD)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
