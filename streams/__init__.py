"""Operators around the classifiers: file and Kafka streams, serving, checkpoints, evaluation."""
