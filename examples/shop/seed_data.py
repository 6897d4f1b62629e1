"""The raw material of the demo data: names, cities, the product catalog and the KB articles."""

from __future__ import annotations

__all__ = ["CATALOG", "CITIES", "FIRST_NAMES", "KB_ARTICLES", "LAST_NAMES", "REFUND_REASONS"]

FIRST_NAMES = (
    "Emma", "Liam", "Olivia", "Noah", "Ava", "Lucas", "Mia", "Ethan", "Sofia", "Mateo",
    "Hannah", "Daan", "Priya", "Arjun", "Yuki", "Kenji", "Fatima", "Omar", "Chloe", "Leo",
    "Nora", "Finn", "Isla", "Jonas", "Maya", "Ravi", "Wei", "Mei", "Lars", "Ines",
)  # fmt: skip
LAST_NAMES = (
    "de Vries", "Jansen", "Smith", "Johnson", "Garcia", "Müller", "Rossi", "Tan", "Lim",
    "Nguyen", "Kim", "Patel", "Singh", "Brown", "Bakker", "Visser", "Lopez", "Wong", "Ong",
    "Schmidt", "Dubois", "Silva", "Novak", "Kowalski", "Andersen", "Haddad", "Sato", "Lee",
)  # fmt: skip
CITIES = (
    "Amsterdam", "Rotterdam", "Utrecht", "Berlin", "Paris", "London", "Chicago", "New York",
    "Austin", "Toronto", "Singapore", "Kuala Lumpur", "Sydney", "Tokyo", "Madrid",
)  # fmt: skip
# category -> (adjectives, nouns, price range in cents)
CATALOG = {
    "Electronics": (
        ("Wireless", "Compact", "Pro", "Smart", "Portable", "Ultra", "Slim", "Mini"),
        ("Headphones", "Speaker", "Charger", "Keyboard", "Mouse", "Webcam", "Power Bank", "Hub"),
        (1_499, 29_999),
    ),
    "Home & Kitchen": (
        ("Ceramic", "Stainless", "Bamboo", "Cast-Iron", "Glass", "Nordic", "Classic", "Stackable"),
        ("Mug Set", "Pan", "Knife Block", "Kettle", "Cutting Board", "Lamp", "Storage Jar", "Tray"),
        (899, 14_999),
    ),
    "Outdoor": (
        ("Trail", "Alpine", "Waterproof", "Lightweight", "Insulated", "Folding", "Rugged", "Camp"),
        ("Backpack", "Tent", "Bottle", "Headlamp", "Chair", "Sleeping Bag", "Jacket", "Stove"),
        (1_299, 39_999),
    ),
    "Apparel": (
        ("Merino", "Organic Cotton", "Linen", "Fleece", "Denim", "Wool", "Everyday", "Relaxed"),
        ("T-Shirt", "Hoodie", "Socks", "Scarf", "Cap", "Shirt", "Sweater", "Shorts"),
        (999, 12_999),
    ),
    "Books": (
        ("Illustrated", "Pocket", "Collected", "Complete", "Practical", "Beginner's", "Annotated"),
        ("Cookbook", "Atlas", "Field Guide", "Novel", "Journal", "Sketchbook", "Handbook"),
        (799, 4_999),
    ),
}
REFUND_REASONS = (
    "item arrived damaged",
    "wrong size",
    "item not as described",
    "late delivery",
    "changed mind within return window",
    "defective on arrival",
)

# The shop's policies, as (title, body).
KB_ARTICLES: tuple[tuple[str, str], ...] = (
    (
        "Refund policy",
        "This article explains how refunds work. We accept refund requests within 30 days of "
        "delivery for items that are unused and in their original packaging. Once the returned "
        "item is received and inspected, the refund is issued to the original payment method. "
        "Refunds can be partial when only some items of an order are returned, and the total "
        "refunded can never exceed the amount paid for the order. Shipping fees are refunded "
        "only when the item arrived damaged or we sent the wrong item.",
    ),
    (
        "When will I see my refund?",
        "After a refund is issued, card refunds usually appear on your statement within 5 to 10 "
        "business days, depending on your bank. PayPal refunds arrive within 2 business days and "
        "store credit is available immediately. If a refund has not arrived after 10 business "
        "days, contact support with your order number and we will trace it with the payment "
        "provider.",
    ),
    (
        "How to return an item",
        "To start a return, open the order in your account, choose the items you want to send "
        "back and pick a reason. You will receive a return authorisation and instructions by "
        "email. Pack the item securely with all accessories and manuals, attach the return "
        "label and drop the parcel at any carrier location within 14 days of requesting the "
        "return.",
    ),
    (
        "Return shipping labels",
        "Return labels are free for gold tier members and for items that arrived damaged, "
        "defective or wrong. For other returns the label cost is deducted from the refund. "
        "Labels are valid for 14 days; if yours has expired, request a new one from the order "
        "page rather than reusing the old label, which carriers will reject.",
    ),
    (
        "Shipping times and options",
        "Orders placed before 2 pm local time on a business day leave our warehouse the same "
        "day. Standard shipping takes 3 to 5 business days and express shipping 1 to 2 business "
        "days. We ship from three warehouses, in Amsterdam, Chicago and Singapore, and always "
        "choose the one closest to you that has the items in stock.",
    ),
    (
        "International shipping and customs",
        "We ship to more than 40 countries. Orders shipped across customs borders may be "
        "subject to import duties and taxes, which are charged by the destination country and "
        "paid by the recipient unless the checkout showed them as prepaid. Customs inspections "
        "can add several days to the delivery time.",
    ),
    (
        "Tracking your order",
        "As soon as an order ships you receive an email with its tracking number, which starts "
        "with TRK. You can follow the shipment on the order page or on the carrier's website. "
        "Tracking can take up to 24 hours to show the first scan after the label is created, so "
        "a shipment that reports no events yet is usually on its way to the carrier.",
    ),
    (
        "Lost or delayed packages",
        "If tracking has not changed for 5 business days, or the parcel is marked delivered but "
        "you cannot find it, check with neighbours and your building's reception first. Then "
        "contact support: we open an investigation with the carrier, and if the package is "
        "confirmed lost we send a replacement or issue a full refund, including shipping.",
    ),
    (
        "Damaged or defective items",
        "If an item arrives damaged or does not work, report it within 14 days of delivery with "
        "a photo of the item and of the packaging. We will send a free return label and, at "
        "your choice, ship a replacement or issue a full refund including the original "
        "shipping cost. You do not need to wait for the return to arrive before a replacement "
        "is sent.",
    ),
    (
        "Warranty coverage",
        "All electronics carry a two-year manufacturer warranty covering defects in materials "
        "and workmanship; other products carry a one-year warranty. The warranty does not cover "
        "accidental damage, normal wear, water damage or repairs made by third parties. Keep "
        "your order number as proof of purchase.",
    ),
    (
        "Making a warranty claim",
        "To make a warranty claim, contact support with your order number, a description of "
        "the fault and, where possible, a short video showing it. We repair or replace the "
        "product, or refund it when neither is possible. Warranty repairs usually take 10 to 15 "
        "business days from the day we receive the item.",
    ),
    (
        "Exchanges and size swaps",
        "Apparel and footwear can be exchanged for a different size or colour within 30 days "
        "of delivery. Request the exchange from the order page; we reserve the new item and "
        "ship it as soon as the carrier scans your return. If the new item costs more, we charge "
        "the difference; if it costs less, we refund the difference.",
    ),
    (
        "Payment methods",
        "We accept Visa, Mastercard, American Express, PayPal, Apple Pay, Google Pay and iDEAL. "
        "Cards are authorised when the order is placed and charged when it ships, so a "
        "cancelled order is never charged. Gift cards and store credit can be combined with any "
        "other payment method.",
    ),
    (
        "Failed or declined payments",
        "A payment can be declined because of insufficient funds, an expired card, an address "
        "mismatch or your bank's fraud checks. Your order stays on hold for 48 hours so you can "
        "update the payment method from the order page. After 48 hours an unpaid order is "
        "cancelled automatically and the items are released back to stock.",
    ),
    (
        "Cancelling an order",
        "You can cancel an order yourself while its status is processing. Once the order has "
        "shipped it can no longer be cancelled, but you can refuse the delivery or return it "
        "for a refund under the refund policy. Cancelled orders cannot be refunded a second "
        "time because they are never charged.",
    ),
    (
        "Changing your shipping address",
        "The shipping address can be changed from the order page while the order is "
        "processing. After the order has shipped, some carriers let you redirect the parcel "
        "using the tracking number; redirection fees are charged by the carrier. We cannot "
        "change the address of an order that is already out for delivery.",
    ),
    (
        "Out-of-stock items and backorders",
        "When an item in your order is out of stock in every warehouse, the order stays "
        "processing until new stock arrives, which normally takes one to three weeks. We email "
        "you the expected date. You can cancel the backordered item at any time before it "
        "ships, or ask us to ship the items that are in stock right away.",
    ),
    (
        "Partial shipments",
        "Orders with items from several warehouses may arrive in more than one parcel. Each "
        "parcel gets its own tracking number, and you are never charged extra shipping for a "
        "split shipment. The order status changes to shipped when the first parcel leaves and "
        "to delivered when the last one arrives.",
    ),
    (
        "Order status explained",
        "Processing means we have received your order and are preparing it. Shipped means the "
        "parcel has left the warehouse and has a tracking number. Delivered means the carrier "
        "has confirmed delivery. Cancelled means the order was cancelled before shipping and "
        "no payment was taken.",
    ),
    (
        "Price adjustments and promotions",
        "If the price of an item drops within 14 days of your purchase, we refund the "
        "difference on request. Promotion codes must be entered at checkout and cannot be "
        "applied after the order is placed. Only one promotion code can be used per order, and "
        "codes cannot be exchanged for cash.",
    ),
    (
        "Gift cards and store credit",
        "Gift cards never expire and can be used for any product. Store credit is issued for "
        "refunds when you choose it instead of a refund to the original payment method, and it "
        "is available in your account immediately. Neither gift cards nor store credit can be "
        "refunded as cash.",
    ),
    (
        "Loyalty tiers",
        "Customers are standard, silver or gold members depending on their spending over the "
        "last twelve months. Silver members get free standard shipping on every order. Gold "
        "members also get free express shipping, free return labels and priority support with "
        "an answer within four business hours.",
    ),
    (
        "Invoices and receipts",
        "An invoice is emailed when an order ships and can be downloaded from the order page at "
        "any time. Business customers can add a company name and VAT number before the order "
        "ships. When a refund is issued we send a credit note that references the original "
        "invoice.",
    ),
    (
        "Account and password help",
        "To reset your password, use the forgot password link on the sign-in page; the reset "
        "link is valid for one hour. You can change your email address from your account "
        "settings, after confirming the new address. For security reasons support cannot see "
        "or set your password.",
    ),
    (
        "Contacting support",
        "Our support team is available by chat and email every day from 8 am to 8 pm CET. "
        "Please include your order number so we can help you faster. Complex cases such as "
        "disputed refunds, lost parcels and warranty repairs are escalated to a specialist, "
        "who replies within two business days.",
    ),
)
