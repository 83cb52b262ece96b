with open("order.txt", "a") as f:
    f.write("train\n")
data = open("data.txt").read().strip()
with open("model.txt", "w") as f:
    f.write(f"model trained on {data}\n")
