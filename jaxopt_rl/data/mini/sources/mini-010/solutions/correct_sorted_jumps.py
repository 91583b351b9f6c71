# O(27 * 60 + T log T + T * 9 * log gap): answer questions in increasing season order, jumping the state forward by the gap with precomputed powers.
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
    powers = [[[a % MOD, b % MOD, c % MOD], [1, 0, 0], [0, 0, 1]]]
    for _ in range(61):
        powers.append(mat_mul(powers[-1], powers[-1]))
    answers = [0] * t
    season, v0, v1 = 0, x1 % MOD, x0 % MOD  # state (x_{season+1}, x_season, 1)
    for j in sorted(range(t), key=seasons.__getitem__):
        gap, k = seasons[j] - season, 0
        while gap:
            if gap & 1:
                m = powers[k]
                v0, v1 = ((m[0][0] * v0 + m[0][1] * v1 + m[0][2]) % MOD,
                          (m[1][0] * v0 + m[1][1] * v1 + m[1][2]) % MOD)
            gap >>= 1
            k += 1
        season = seasons[j]
        answers[j] = v1
    sys.stdout.write("\n".join(map(str, answers)) + "\n")


main()
