# O(T * 27 * 2 log n): a full 3x3 matrix exponentiation by squaring for every question, nothing shared between questions.
import sys

MOD = 10**9 + 7


def mat_mul(p, q):
    return [[(p[i][0] * q[0][j] + p[i][1] * q[1][j] + p[i][2] * q[2][j]) % MOD for j in range(3)]
            for i in range(3)]


def mat_pow(m, e):
    result = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    while e:
        if e & 1:
            result = mat_mul(result, m)
        m = mat_mul(m, m)
        e >>= 1
    return result


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    step = [[a, b, c], [1, 0, 0], [0, 0, 1]]
    out = []
    for i in range(t):
        n = int(data[6 + i])
        # (x_{n+1}, x_n, 1) = M^n (x_1, x_0, 1)
        p = mat_pow(step, n)
        out.append((p[1][0] * x1 + p[1][1] * x0 + p[1][2]) % MOD)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
