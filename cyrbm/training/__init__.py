"""Training: the Trainer (CD-k, PCD, PT, AMH, PTT), its samplers, greedy DBN
training and ln Z through training.
"""
