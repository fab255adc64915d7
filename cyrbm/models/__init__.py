"""The model classes, one per unit type (binary RBM, Gaussian RBM, SRBM), and
what is built of them (DBN, the mixture baseline); exact enumeration.
"""
