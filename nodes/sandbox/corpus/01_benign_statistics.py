# attack: benign statistics over numbers
# expect: ok
# stdout: mean=3.875
import statistics
xs = [3, 1, 4, 1, 5, 9, 2, 6]
print(f'mean={statistics.mean(xs):.3f} median={statistics.median(xs)}')
