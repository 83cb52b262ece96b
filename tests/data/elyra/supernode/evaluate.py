with open("order.txt", "a") as f:
    f.write("evaluate\n")
model = open("model.txt").read().strip()
with open("metrics.txt", "w") as f:
    f.write(f"accuracy=0.9 for {model}\n")
