# O(T * 9 * log n): Kitamasa-style; x^(n) modulo the characteristic polynomial of the homogenised 3rd-order recurrence, per question.
import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    # subtracting consecutive terms removes c: x_k = (a+1) x_{k-1} + (b-a) x_{k-2} - b x_{k-3}
    r0, r1, r2 = (a + 1) % MOD, (b - a) % MOD, (-b) % MOD
    x2 = (a * x1 + b * x0 + c) % MOD
    first = (x0 % MOD, x1 % MOD, x2)

    def mul(p, q):
        """Product of two polynomials of degree < 3, reduced by x^3 = r0 x^2 + r1 x + r2."""
        d = [0] * 5
        for i in range(3):
            if p[i]:
                for j in range(3):
                    d[i + j] += p[i] * q[j]
        for k in (4, 3):
            top = d[k] % MOD
            if top:
                d[k - 1] += top * r0
                d[k - 2] += top * r1
                d[k - 3] += top * r2
        return [d[0] % MOD, d[1] % MOD, d[2] % MOD]

    out = []
    for i in range(t):
        n = int(data[6 + i])
        result = [1, 0, 0]  # the polynomial 1
        base = [0, 1, 0]  # the polynomial x
        while n:
            if n & 1:
                result = mul(result, base)
            base = mul(base, base)
            n >>= 1
        out.append(sum(coef * x for coef, x in zip(result, first)) % MOD)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
