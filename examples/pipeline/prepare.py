import csv
import os
import random

rows = int(os.environ.get("rows", "20"))
random.seed(0)
with open("data.csv", "w", newline="") as fh:
    writer = csv.writer(fh)
    writer.writerow(["x", "y"])
    for _ in range(rows):
        x = random.random()
        writer.writerow([round(x, 4), round(2 * x + random.gauss(0, 0.1), 4)])
print("wrote", rows, "rows")
