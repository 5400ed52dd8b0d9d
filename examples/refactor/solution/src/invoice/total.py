"""Invoice totals, one rule per function."""

TAX = {"food": 1.07, "books": 1.0}
DEFAULT_TAX = 1.2


def line_price(line):
    price = line["price"] * line["quantity"] * TAX.get(line.get("category"), DEFAULT_TAX)
    if line["quantity"] >= 10 and line.get("bulk", True):
        price *= 0.95
    return price


def loyalty(total, customer):
    if customer.get("vip"):
        return total * 0.9
    if customer.get("years", 0) > 5:
        return total * 0.95
    return total


def apply_coupon(total, coupon):
    if not coupon:
        return total
    if coupon.get("kind") == "percent":
        return total * (1 - coupon["value"] / 100)
    if coupon.get("kind") == "fixed":
        return max(0.0, total - coupon["value"])
    return total


def invoice_total(lines, customer, coupon=None):
    total = loyalty(sum(line_price(line) for line in lines), customer)
    total = apply_coupon(total, coupon)
    if total > 1000 and not customer.get("vip"):
        total -= 10
    shipping = 0.0 if total > 50 or customer.get("vip") else 4.99
    return round(total + shipping, 2)
