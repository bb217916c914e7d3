"""Batch 5's Keras layers for scripts/tf_graph_parity.py (see scripts/tf_graph_parity_cases5.py):
layers in training mode and options batch 4 left at their defaults, as (name, make, input shape,
call options) entries of the script's KERAS. The batch norms in training mode assign their moving
statistics, so they go through a SavedModel (``SAVED5``)."""

import tensorflow as tf

SAVED5 = {"c5_k_conv2d_groups_s2", "c5_k_bn_train_nocenter", "c5_k_bn_train_noscale", "c5_k_bn_train_axis1", "c5_k_bn_train_conv_mom"}


def keras_cases():
    L = tf.keras.layers
    return [
        ("c5_k_bn_train_nocenter", lambda: L.BatchNormalization(center=False, momentum=0.9), (4, 3), {"training": True}),
        ("c5_k_bn_train_noscale", lambda: L.BatchNormalization(scale=False, epsilon=0.01), (4, 2, 2, 3), {"training": True}),
        ("c5_k_bn_train_axis1", lambda: L.BatchNormalization(axis=1), (3, 2, 4), {"training": True}),
        ("c5_k_bn_train_conv_mom", lambda: L.BatchNormalization(momentum=0.5), (2, 3, 3, 2), {"training": True}),
        ("c5_k_layernorm_noaffine", lambda: L.LayerNormalization(center=False, scale=False), (3, 4), {"training": True}),
        ("c5_k_groupnorm_g1", lambda: L.GroupNormalization(groups=1, epsilon=1e-2), (2, 3, 3, 4), {"training": True}),
        ("c5_k_groupnorm_inst", lambda: L.GroupNormalization(groups=-1), (2, 5, 3), {"training": True}),
        ("c5_k_conv2d_groups_s2", lambda: L.Conv2D(4, 3, strides=2, padding="same", groups=2), (2, 6, 6, 4), {"training": True}),
        ("c5_k_dwconv_dil", lambda: L.DepthwiseConv2D(3, dilation_rate=2, padding="same"), (1, 6, 6, 2), {"training": True}),
        ("c5_k_dense_softmax_nobias", lambda: L.Dense(4, activation="softmax", use_bias=False), (3, 5), {"training": True}),
        ("c5_k_relu_thresh", lambda: L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.5), (3, 4), {"training": True}),
        ("c5_k_dropout_zero_train", lambda: L.Dropout(0.0), (3, 4), {"training": True}),
        ("c5_k_conv1d_valid_train", lambda: L.Conv1D(3, 2, strides=2, activation="elu"), (2, 7, 2), {"training": True}),
        ("c5_k_maxpool_same_s1", lambda: L.MaxPooling2D(3, strides=1, padding="same"), (1, 4, 4, 2), {"training": True}),
        ("c5_k_dense_tanh_4d", lambda: L.Dense(3, activation="tanh"), (2, 2, 3, 4), {"training": True}),
    ]
