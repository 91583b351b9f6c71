# O(T * 27 * 2 log n): object-oriented Matrix with __matmul__ and __pow__ over nested index loops (attribute and call overhead).
import sys

MOD = 10**9 + 7


class Matrix:
    def __init__(self, rows):
        self.rows = rows

    @classmethod
    def identity(cls, size):
        return cls([[1 if i == j else 0 for j in range(size)] for i in range(size)])

    def __matmul__(self, other):
        size = len(self.rows)
        out = [[0] * size for _ in range(size)]
        for i in range(size):
            for j in range(size):
                total = 0
                for k in range(size):
                    total += self.rows[i][k] * other.rows[k][j]
                out[i][j] = total % MOD
        return Matrix(out)

    def __pow__(self, e):
        result = Matrix.identity(len(self.rows))
        base = self
        while e > 0:
            if e % 2 == 1:
                result = result @ base
            base = base @ base
            e //= 2
        return result


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    step = Matrix([[a, b, c], [1, 0, 0], [0, 0, 1]])
    out = []
    for i in range(t):
        p = (step ** int(data[6 + i])).rows
        out.append((p[1][0] * x1 + p[1][1] * x0 + p[1][2]) % MOD)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
