# O(27 * 60 + T * 9 * log n): precompute M^(2^k) once; each question applies the powers for its set bits to a 3-vector.
import sys

MOD = 10**9 + 7


def mat_mul(p, q):
    return [[(p[i][0] * q[0][j] + p[i][1] * q[1][j] + p[i][2] * q[2][j]) % MOD for j in range(3)]
            for i in range(3)]


def main():
    data = sys.stdin.buffer.read().split()
    a, b, c, x0, x1 = map(int, data[:5])
    t = int(data[5])
    seasons = list(map(int, data[6:6 + t]))
    # (x_{k+1}, x_k, 1) = M (x_k, x_{k-1}, 1)
    powers = [[[a % MOD, b % MOD, c % MOD], [1, 0, 0], [0, 0, 1]]]
    top = max(seasons).bit_length()
    for _ in range(1, top):
        powers.append(mat_mul(powers[-1], powers[-1]))
    out = []
    for n in seasons:
        if n == 0:
            out.append(x0 % MOD)
            continue
        v0, v1, v2 = x1, x0, 1  # state at season 1
        e, k = n - 1, 0
        while e:
            if e & 1:
                m = powers[k]
                v0, v1 = ((m[0][0] * v0 + m[0][1] * v1 + m[0][2] * v2) % MOD,
                          (m[1][0] * v0 + m[1][1] * v1 + m[1][2] * v2) % MOD)
            e >>= 1
            k += 1
        out.append(v0)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
