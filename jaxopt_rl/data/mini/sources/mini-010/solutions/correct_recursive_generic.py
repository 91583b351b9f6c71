# O(T * 27 * log n) with generic code: recursive exponentiation (M^e = (M^(e/2))^2) and a zip/sum matrix product.
import sys

MOD = 10**9 + 7


def mat_mul(p, q):
    columns = list(zip(*q))
    return [[sum(x * y for x, y in zip(row, col)) % MOD for col in columns] for row in p]


def mat_pow(m, e):
    if e == 0:
        return [[int(i == j) for j in range(len(m))] for i in range(len(m))]
    half = mat_pow(m, e // 2)
    square = mat_mul(half, half)
    return mat_mul(square, m) if e % 2 else square


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    step = [[a, b, c], [1, 0, 0], [0, 0, 1]]
    out = []
    for i in range(t):
        n = int(data[6 + i])
        p = mat_pow(step, n)
        out.append((p[1][0] * x1 + p[1][1] * x0 + p[1][2]) % MOD)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
