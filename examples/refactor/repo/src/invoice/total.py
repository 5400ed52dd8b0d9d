"""Invoice totals: one function that grew by accretion."""


def invoice_total(lines, customer, coupon=None):
    total = 0.0
    for line in lines:
        price = line["price"] * line["quantity"]
        if line.get("category") == "food":
            price *= 1.07
        elif line.get("category") == "books":
            price *= 1.0
        else:
            price *= 1.2
        if line["quantity"] >= 10 and line.get("bulk", True):
            price *= 0.95
        total += price
    if customer.get("vip"):
        total *= 0.9
    elif customer.get("years", 0) > 5:
        total *= 0.95
    if coupon:
        if coupon.get("kind") == "percent":
            total *= 1 - coupon["value"] / 100
        elif coupon.get("kind") == "fixed":
            total = max(0.0, total - coupon["value"])
    if total > 1000 and not customer.get("vip"):
        total -= 10
    shipping = 0.0 if total > 50 or customer.get("vip") else 4.99
    return round(total + shipping, 2)
